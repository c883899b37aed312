import { ShapeStream as ElectricStream } from '@electric-sql/client'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { expectClientsMatchPostgres } from '../support/converge'
import { cuttingFetch } from './support/cutting-fetch'
import { ignoreConnectionErrors } from '../support/postgres'
import type { Message } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Subquery shapes on sqt (tasks) through sqp (projects) and sqo (orgs); `sql` is the where as Postgres checks it. */
const SHAPES: Array<{ where: string; params?: Record<string, string>; sql: string }> = [
  {
    where: 'project_id IN (SELECT id FROM sqp WHERE NOT archived)',
    sql: 'project_id IN (SELECT id FROM sqp WHERE NOT archived)'
  },
  {
    where: 'project_id IN (SELECT id FROM sqp WHERE NOT archived) OR owner_id = $1',
    params: { 1: '1' },
    sql: 'project_id IN (SELECT id FROM sqp WHERE NOT archived) OR owner_id = 1'
  },
  {
    where: 'project_id NOT IN (SELECT id FROM sqp WHERE archived)',
    sql: 'project_id NOT IN (SELECT id FROM sqp WHERE archived)'
  },
  {
    where: 'project_id IN (SELECT id FROM sqp WHERE org_id IN (SELECT id FROM sqo WHERE active)) AND note <> $1',
    params: { 1: 'x' },
    sql: "project_id IN (SELECT id FROM sqp WHERE org_id IN (SELECT id FROM sqo WHERE active)) AND note <> 'x'"
  }
]

/** Random transactions touching the inner and the outer tables, often both at once. */
async function writeRandomly(pool: pg.Pool, transactions: number, seed: number): Promise<void> {
  let state = seed
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return Math.floor((state / 2 ** 31) * n)
  }
  for (let i = 0; i < transactions; i++) {
    const statements: string[] = []
    for (let j = 0; j <= random(3); j++) {
      const project = 1 + random(12)
      const task = 1 + random(80)
      switch (random(7)) {
        case 0:
          statements.push(`UPDATE sqp SET archived = NOT archived WHERE id = ${project}`)
          break
        case 1:
          statements.push(`UPDATE sqp SET org_id = ${1 + random(3)} WHERE id = ${project}`)
          break
        case 2:
          statements.push(`UPDATE sqo SET active = NOT active WHERE id = ${1 + random(3)}`)
          break
        case 3:
          statements.push(
            `INSERT INTO sqt VALUES (${task}, ${project}, ${random(4)}, 'n${random(5)}') ON CONFLICT (id) DO UPDATE SET project_id = EXCLUDED.project_id, note = EXCLUDED.note`
          )
          break
        case 4:
          statements.push(
            `UPDATE sqt SET owner_id = ${random(4)}, note = '${random(3) === 0 ? 'x' : 'y'}' WHERE id = ${task}`
          )
          break
        case 5:
          statements.push(`DELETE FROM sqt WHERE id = ${task}`)
          break
        default:
          statements.push(
            `INSERT INTO sqp VALUES (${12 + random(4)}, ${random(2) === 0}, ${1 + random(3)}) ON CONFLICT (id) DO UPDATE SET archived = NOT sqp.archived`
          )
      }
    }
    // on its own connection: a transaction that fails (the two writers deadlock) is rolled back there, locks released
    const client = await pool.connect()
    try {
      await client.query(`BEGIN; ${statements.join('; ')}; COMMIT`)
    } catch {
      await client.query('ROLLBACK').catch(() => undefined)
    } finally {
      client.release()
    }
  }
}

/**
 * Randomized writes to both tables of subquery shapes while clients follow them: the official client over SSE with its
 * connections cut, and a long-poll client; the replication connection is also killed once in the middle. Each client's
 * final rows, materialised by the reference's tag rules, equal `SELECT … WHERE … IN (SELECT …)`, with no anomaly.
 */
describe('nothing lost on subquery shapes', () => {
  let server: TestShapeServer | null = null
  afterEach(async () => {
    await server?.close()
    server = null
  })

  it('every client ends with exactly the rows of its subquery shape, long-poll and SSE', async () => {
    server = await startTestShapeServer({ headerBrand: 'electric', longPollTimeout: 1000, sseKeepAlive: 500 })
    const setup = new pg.Pool({ connectionString: server.databaseUrl, max: 4 })
    ignoreConnectionErrors(setup)
    await setup.query('CREATE TABLE sqo (id int PRIMARY KEY, active boolean NOT NULL)')
    await setup.query('CREATE TABLE sqp (id int PRIMARY KEY, archived boolean NOT NULL, org_id int)')
    await setup.query('CREATE TABLE sqt (id int PRIMARY KEY, project_id int NOT NULL, owner_id int, note text)')
    await setup.query('INSERT INTO sqo VALUES (1, true), (2, true), (3, false)')
    await setup.query('INSERT INTO sqp SELECT g, g % 3 = 0, 1 + g % 3 FROM generate_series(1, 12) g')
    await setup.query("INSERT INTO sqt SELECT g, 1 + g % 12, g % 4, 'n' || (g % 5) FROM generate_series(1, 60) g")
    const url = `${server.url}/v1/shape`
    const controller = new AbortController()
    const official = SHAPES.map((shape, index) => {
      const client = new TagClient(server?.url ?? '', {})
      const params = { table: 'sqt', where: shape.where, ...(shape.params ? { params: shape.params } : {}) }
      const stream = new ElectricStream({
        url,
        params,
        liveSse: true,
        signal: controller.signal,
        // SSE responses cut after 0.8–2 s (a flaky network)
        fetchClient: cuttingFetch(index + 1, { fromMs: 800, spreadMs: 1200 })
      })
      stream.subscribe((messages) => client.apply(messages as unknown as Message[]))
      return { kind: 'official SSE', shape, client }
    })
    const longPoll = SHAPES.map((shape) => {
      const params: Record<string, string> = { table: 'sqt', where: shape.where }
      for (const [key, value] of Object.entries(shape.params ?? {})) params[`params[${key}]`] = value
      const client = new TagClient(server?.url ?? '', params, true, 'electric')
      let stopped = false
      const following = (async () => {
        while (!stopped) await client.sync().catch(() => sleep(100))
      })()
      return { kind: 'long-poll', shape, client, stop: () => ((stopped = true), following) }
    })

    for (let round = 0; round < 5; round++) {
      await Promise.all([writeRandomly(setup, 20, 7 + round), writeRandomly(setup, 20, 1001 + round)])
      // the replication connection dies once in the middle: the server reconnects and resumes after what it applied
      if (round === 2) await setup.query('SELECT pg_terminate_backend(pid) FROM pg_stat_replication')
      await sleep(500)
    }
    try {
      const clients = [...longPoll, ...official]
      const labelOf = ({ kind, shape }: (typeof clients)[number]) => `${kind} ${shape.where}`
      await expectClientsMatchPostgres(setup, clients, {
        rows: ({ client }) => client.ids(),
        expected: (pool, { shape }) => idsOf(pool, `SELECT id FROM sqt WHERE ${shape.sql}`),
        label: labelOf,
        anomalies: ({ client }) => client.anomalies
      })
      for (const entry of clients) {
        const { shape, client } = entry
        const label = labelOf(entry)
        const { rows } = await setup.query<{ id: number; note: string; owner_id: number }>(
          `SELECT id, note, owner_id FROM sqt WHERE ${shape.sql}`
        )
        for (const row of rows) expect(client.rows.get(`"public"."sqt"/"${row.id}"`)?.value.note, label).toBe(row.note)
      }
    } finally {
      controller.abort()
      await Promise.all(longPoll.map((client) => client.stop()))
      await setup.end()
    }
  })
})
