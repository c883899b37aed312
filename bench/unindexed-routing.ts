/**
 * Target 6 of bench/shape-server.ts (issue 12, bench b): 2,000 shapes whose where the router cannot index, one
 * 3,000-row UPDATE that moves rows between them; every shape with a change has a live long-poll waiting (clients in
 * another process). Measures commit → the last of those answers, and the longest event-loop block meanwhile.
 */
import { writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PerformanceObserver, constants, monitorEventLoopDelay } from 'node:perf_hooks'
import { get, shapeUrl, syncToEnd } from '../test/support/shape-http'
import type { TestShapeServer } from '../test/support/shape-server'
import {
  TASK_ROWS,
  createTasks,
  selectedKeys,
  unindexedWhere,
  updateAllTasks
} from '../test/support/unindexed-workload'

const SHAPES = 2_000
const ROUNDS = 3

export interface UnindexedRoutingBench {
  server: TestShapeServer
  report(line: string): void
  /** Which client program `clients` runs, for the report. */
  clientName: string
  /** Long-polls in a child process: `target` a URL or `@file` of URLs; resolves `ready` once they are sent. */
  clients(
    target: string,
    count: number
  ): { answers: Promise<Array<{ status: number; at: number }>>; ready: Promise<void> }
}

/** Which shapes `update` changes (rows in the where before or after it), found in a transaction rolled back. */
async function shapesChanged(server: TestShapeServer, wheres: readonly string[], update: string): Promise<number[]> {
  const client = await server.pool.connect()
  try {
    const before = await selectedKeys(client, wheres)
    await client.query('BEGIN')
    await client.query(update)
    const after = await selectedKeys(client, wheres)
    await client.query('ROLLBACK')
    return wheres.flatMap((_, i) => ((before[i]?.size ?? 0) + (after[i]?.size ?? 0) > 0 ? [i] : []))
  } finally {
    client.release()
  }
}

export async function unindexedRouting({ server, report, clients, clientName }: UnindexedRoutingBench): Promise<void> {
  const service = server.app.rooms.shapes.service()
  if (!service) throw new Error('no shape service')
  await createTasks(server.pool)
  const shapes: Array<{ where: string; handle: string; offset: string }> = []
  for (let first = 0; first < SHAPES; first += 50) {
    const batch = Array.from({ length: Math.min(50, SHAPES - first) }, async (_, j) => {
      const where = unindexedWhere(first + j)
      const synced = await syncToEnd(server.url, { table: 'tasks', where })
      return { where, handle: synced.handle, offset: synced.offset }
    })
    shapes.push(...(await Promise.all(batch)))
  }
  const dir = await mkdtemp(join(tmpdir(), 'syncscope-bench-'))
  const rounds: Array<{
    delivered: number
    p50: number
    blocked: number
    cpu: number
    answers: number
    gcMax: number
    gcTotal: number
    gcMajor: number
  }> = []
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const update = updateAllTasks(round)
      const changing = await shapesChanged(
        server,
        shapes.map((shape) => shape.where),
        update
      )
      const file = join(dir, `urls-${round}`)
      const waiting = changing.map((i) => shapes[i] as (typeof shapes)[number])
      writeFileSync(
        file,
        waiting
          .map((shape) =>
            shapeUrl(server.url, {
              table: 'tasks',
              where: shape.where,
              handle: shape.handle,
              offset: shape.offset,
              live: 'true'
            })
          )
          .join('\n')
      )
      const polls = clients(`@${file}`, 1)
      await polls.ready
      await new Promise((resolve) => setTimeout(resolve, 3_000))
      const applied = service.globalLsn
      const delay = monitorEventLoopDelay({ resolution: 1 })
      const gcs: Array<{ duration: number; major: boolean }> = []
      const gcObserver = new PerformanceObserver((list) =>
        gcs.push(
          ...list.getEntries().map((entry) => ({
            duration: entry.duration,
            major: ((entry as { detail?: { kind?: number } }).detail?.kind ?? 0) !== constants.NODE_PERFORMANCE_GC_MINOR
          }))
        )
      )
      gcObserver.observe({ entryTypes: ['gc'] })
      delay.enable()
      const cpu = process.cpuUsage()
      await server.pool.query(update)
      const committed = performance.timeOrigin + performance.now()
      while (service.globalLsn === applied) await new Promise((resolve) => setTimeout(resolve, 1))
      const used = process.cpuUsage(cpu)
      delay.disable()
      gcObserver.disconnect()
      const answers = await polls.answers
      if (answers.some((answer) => answer.status !== 200))
        throw new Error(`non-200 answers: ${JSON.stringify(answers.filter((a) => a.status !== 200).slice(0, 3))}`)
      const latencies = answers.map((answer) => answer.at - committed).sort((a, b) => a - b)
      rounds.push({
        delivered: latencies[latencies.length - 1] ?? NaN,
        p50: latencies[Math.floor(latencies.length / 2)] ?? NaN,
        blocked: delay.max / 1e6,
        cpu: (used.user + used.system) / 1000,
        answers: answers.length,
        gcMax: Math.max(0, ...gcs.map((gc) => gc.duration)),
        gcTotal: gcs.reduce((sum, gc) => sum + gc.duration, 0),
        gcMajor: gcs.filter((gc) => gc.major).length
      })
      if (process.env.BENCH_VERBOSE)
        process.stderr.write(`round ${round}: ${JSON.stringify(rounds[rounds.length - 1])}\n`)
      for (const shape of shapes) {
        shape.offset =
          (
            await get(server.url, { table: 'tasks', where: shape.where, handle: shape.handle, offset: shape.offset })
          ).header('@offset') ?? shape.offset
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  const range = (pick: (r: (typeof rounds)[number]) => number, digits = 0) =>
    `${Math.min(...rounds.map(pick)).toFixed(digits)}–${Math.max(...rounds.map(pick)).toFixed(digits)}`
  report(
    `| 6. ${SHAPES.toLocaleString('en')} shapes whose where is not indexable, one ${TASK_ROWS.toLocaleString('en')}-row UPDATE (${ROUNDS} rounds, a live long-poll on each shape the UPDATE changes: ${range((r) => r.answers)} per round, clients in another process, ${clientName}) | all delivered ${range((r) => r.delivered)} ms, event loop blocked ≤ ${range((r) => r.blocked, 1)} ms | p50 ${range((r) => r.p50)} ms; server CPU for the transaction ${range((r) => r.cpu)} ms; longest garbage-collection pause ${range((r) => r.gcMax, 1)} ms | all ≤ 1.5 s, block ≤ 50 ms |`
  )
}
