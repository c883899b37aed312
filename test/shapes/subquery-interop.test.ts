import { type Message as ClientMessage, type Row, ShapeStream } from '@electric-sql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectClientsMatchPostgres } from '../support/converge'
import type { Message } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'

/** A small deterministic generator, so a failing run can be replayed. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state / 2 ** 31
  }
}

/**
 * The official @electric-sql/client (1.5.28, `electric` header brand) reading a subquery shape, its messages
 * materialised by the reference's tag rules, equals Postgres after random writes to both tables.
 */
describe.each([
  ['long-poll', false],
  ['SSE', true]
] as const)('@electric-sql/client on a subquery shape over %s', (_mode, liveSse) => {
  let server: TestShapeServer
  const suffix = liveSse ? 'sse' : 'lp'
  const projects = `ic_projects_${suffix}`
  const tasks = `ic_tasks_${suffix}`

  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: 'electric', longPollTimeout: 1000, sseKeepAlive: 500 })
    await server.pool.query(`CREATE TABLE ${projects} (id int PRIMARY KEY, archived boolean NOT NULL)`)
    await server.pool.query(`CREATE TABLE ${tasks} (id int PRIMARY KEY, project_id int, owner_id int, title text)`)
    await server.pool.query(`INSERT INTO ${projects} SELECT g, g % 3 = 0 FROM generate_series(1, 8) g`)
    await server.pool.query(
      `INSERT INTO ${tasks} SELECT g, 1 + g % 8, g % 4, 'task ' || g FROM generate_series(1, 40) g`
    )
  })
  afterAll(async () => server?.close())

  it('materialises rows equal to Postgres after random writes to both tables', async () => {
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived) OR owner_id = $1`
    const expected = () =>
      idsOf(
        server.pool,
        `SELECT id FROM ${tasks} WHERE project_id IN (SELECT id FROM ${projects} WHERE NOT archived) OR owner_id = 1`
      )
    const controller = new AbortController()
    const stream = new ShapeStream({
      url: `${server.url}/v1/shape`,
      params: { table: tasks, where, params: { 1: '1' } },
      liveSse,
      signal: controller.signal
    })
    const client = new TagClient(server.url, {})
    stream.subscribe((messages: ClientMessage<Row>[]) => client.apply(messages as unknown as Message[]))
    try {
      await expect.poll(() => client.ids(), { timeout: 10_000 }).toEqual(await expected())
      const next = random(liveSse ? 7 : 11)
      for (let round = 0; round < 40; round++) {
        const project = 1 + Math.floor(next() * 10)
        const task = 1 + Math.floor(next() * 50)
        const roll = next()
        if (roll < 0.3)
          await server.pool.query(
            `INSERT INTO ${projects} VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET archived = NOT ${projects}.archived`,
            [project, next() < 0.5]
          )
        else if (roll < 0.4) await server.pool.query(`DELETE FROM ${projects} WHERE id = $1`, [project])
        else if (roll < 0.7)
          await server.pool.query(
            `INSERT INTO ${tasks} VALUES ($1, $2, $3, 'r') ON CONFLICT (id) DO UPDATE SET project_id = EXCLUDED.project_id, title = 'moved'`,
            [task, project, Math.floor(next() * 4)]
          )
        else if (roll < 0.8) await server.pool.query(`DELETE FROM ${tasks} WHERE id = $1`, [task])
        else
          await server.pool.query(
            `BEGIN; UPDATE ${projects} SET archived = NOT archived WHERE id = $1; UPDATE ${tasks} SET title = 'both' WHERE project_id = $1; COMMIT`.replaceAll(
              '$1',
              String(project)
            )
          )
      }
      await expectClientsMatchPostgres(server.pool, [client], {
        rows: () => client.ids(),
        expected,
        anomalies: () => client.anomalies
      })
      const titles = await server.pool.query<{ id: number; title: string }>(`SELECT id, title FROM ${tasks}`)
      for (const { id, title } of titles.rows) {
        const held = client.rows.get(`"public"."${tasks}"/"${id}"`)
        if (held) expect(held.value.title).toBe(title)
      }
    } finally {
      controller.abort()
    }
  })
})
