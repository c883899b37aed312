/**
 * Target 8 of bench/shape-server.ts (issue 14): 1,000 subquery shapes `project_id IN (SELECT id FROM projects WHERE
 * owner_id = const)` on one table; commit → client latency of a change to a task (routed through the index of the
 * shapes' subquery values), then of a move (a project changing owner: one shape's move-out, another's move-in). As a
 * baseline measured in the same run (the machine is shared), the same commits with 1,000 plain `project_id = const`
 * shapes instead.
 */
import { get, syncToEnd } from '../test/support/shape-http'
import type { TestShapeServer } from '../test/support/shape-server'

const SHAPES = 1_000
const TASKS_PER_PROJECT = 5
const COMMITS = 300
const MOVES = 100

export const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
}
const since = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6
const whereOf = (owner: number): string => `project_id IN (SELECT id FROM sq_projects WHERE owner_id = ${owner})`

export async function subqueryRouting(server: TestShapeServer, report: (line: string) => void): Promise<void> {
  await server.pool.query('CREATE TABLE sq_projects (id int PRIMARY KEY, owner_id int NOT NULL)')
  await server.pool.query(
    'CREATE TABLE sq_tasks (id serial PRIMARY KEY, project_id int NOT NULL, val int NOT NULL DEFAULT 0)'
  )
  await server.pool.query(`INSERT INTO sq_projects SELECT g, g FROM generate_series(0, ${SHAPES - 1}) g`)
  await server.pool.query(
    `INSERT INTO sq_tasks (project_id) SELECT g % ${SHAPES} FROM generate_series(0, ${SHAPES * TASKS_PER_PROJECT - 1}) g`
  )
  await server.pool.query('CREATE INDEX sq_tasks_project ON sq_tasks (project_id)')
  const baseline = await commitLatencies(server, (owner) => `project_id = ${owner}`)
  report(
    `| 8 (baseline, same run). commit → client, ${SHAPES.toLocaleString('en')} plain shapes \`project_id = const\` (${COMMITS} commits) | p50 ${percentile(baseline.changes, 50).toFixed(1)} ms, p99 ${percentile(baseline.changes, 99).toFixed(1)} ms | max ${Math.max(...baseline.changes).toFixed(1)} ms, ${baseline.cpu.toFixed(2)} ms CPU per commit | — |`
  )
  const { changes, shapes, follow, cpu } = await commitLatencies(server, whereOf)
  report(
    `| 8. commit → client, ${SHAPES.toLocaleString('en')} subquery shapes \`project_id IN (SELECT id FROM projects WHERE owner_id = const)\` on one table (${COMMITS} commits) | p50 ${percentile(changes, 50).toFixed(1)} ms, p99 ${percentile(changes, 99).toFixed(1)} ms | max ${Math.max(...changes).toFixed(1)} ms, ${cpu.toFixed(2)} ms CPU per commit | p99 ≤ 20 ms |`
  )
  const moves: number[] = []
  const movesCpu = process.cpuUsage()
  for (let i = 0; i < MOVES; i++) {
    const from = shapes[(i * 7919) % shapes.length] as (typeof shapes)[number]
    const to = shapes[(i * 7919 + 1) % shapes.length] as (typeof shapes)[number]
    // the receiving shape's move-in (event, rows read from Postgres, snapshot-end)
    moves.push(
      await follow(to, () =>
        server.pool.query(
          'UPDATE sq_projects SET owner_id = $1 WHERE id = (SELECT min(id) FROM sq_projects WHERE owner_id = $2)',
          [to.owner, from.owner]
        )
      )
    )
  }
  report(
    `| 8b. commit → client of a move-in (a project changes owner), same 1,000 shapes (${MOVES} moves) | p50 ${percentile(moves, 50).toFixed(1)} ms, p99 ${percentile(moves, 99).toFixed(1)} ms | max ${Math.max(...moves).toFixed(1)} ms, ${cpuPer(movesCpu, MOVES).toFixed(2)} ms CPU per move | (no goal) |`
  )
}

async function commitLatencies(server: TestShapeServer, where: (owner: number) => string) {
  const shapes: Array<{ owner: number; handle: string; offset: string }> = []
  for (let first = 0; first < SHAPES; first += 50) {
    const batch = Array.from({ length: Math.min(50, SHAPES - first) }, async (_, i) => {
      const owner = first + i
      const synced = await syncToEnd(server.url, { table: 'sq_tasks', where: where(owner) })
      return { owner, handle: synced.handle, offset: synced.offset }
    })
    shapes.push(...(await Promise.all(batch)))
  }
  const follow = async (shape: (typeof shapes)[number], change: () => Promise<unknown>): Promise<number> => {
    const waiting = get(server.url, {
      table: 'sq_tasks',
      where: where(shape.owner),
      handle: shape.handle,
      offset: shape.offset,
      live: 'true'
    })
    await new Promise((resolve) => setTimeout(resolve, 5))
    const start = process.hrtime.bigint()
    await change()
    const response = await waiting
    const latency = since(start)
    if (response.status !== 200 || !Array.isArray(response.body) || response.body.length < 2)
      throw new Error(`no change answered: ${response.status} ${response.text.slice(0, 200)}`)
    shape.offset = response.header('@offset') ?? shape.offset
    return latency
  }
  const changes: number[] = []
  const started = process.cpuUsage()
  for (let i = 0; i < COMMITS; i++) {
    const shape = shapes[(i * 7919) % shapes.length] as (typeof shapes)[number]
    changes.push(
      await follow(shape, () =>
        server.pool.query(
          'UPDATE sq_tasks SET val = val + 1 WHERE id = (SELECT min(id) FROM sq_tasks WHERE project_id IN (SELECT id FROM sq_projects WHERE owner_id = $1))',
          [shape.owner]
        )
      )
    )
  }
  return { changes, shapes, follow, cpu: cpuPer(started, COMMITS) }
}

/** CPU time of this process (the server and the bench's clients) per operation since `start`: load on the shared machine barely moves it. */
function cpuPer(start: NodeJS.CpuUsage, count: number): number {
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000 / count
}
