import { type Message, type Row, Shape, ShapeStream, isControlMessage } from '@electric-sql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

/** The official @electric-sql/client against our server with the `electric` header brand. */
describe.each([
  ['long-poll', false],
  ['SSE', true]
] as const)('@electric-sql/client over %s', (_mode, liveSse) => {
  let server: TestShapeServer
  const base = liveSse ? 9600 : 9700
  const where = `priority = 5 AND id BETWEEN ${base} AND ${base + 99}`

  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: 'electric', longPollTimeout: 2000, sseKeepAlive: 500 })
    await server.pool.query(
      `INSERT INTO issues (id, project_id, title, priority) SELECT g, 1000000001, 'seed ' || g, 5 FROM generate_series(${base}, ${base + 4}) g`
    )
  })
  afterAll(async () => server?.close())

  const ids = (rows: Row[]) => rows.map((row) => Number(row.id)).sort((a, b) => a - b)
  const expectedIds = async () =>
    (await server.pool.query<{ id: string }>(`SELECT id FROM issues WHERE ${where} ORDER BY id`)).rows.map((row) =>
      Number(row.id)
    )

  it('syncs a shape, follows inserts, updates moving rows in and out, deletes, and a must-refetch', async () => {
    const controller = new AbortController()
    const stream = new ShapeStream({
      url: `${server.url}/v1/shape`,
      params: { table: 'issues', where, columns: ['id', 'title', 'priority', 'labels'] },
      liveSse,
      signal: controller.signal
    })
    const controls: string[] = []
    stream.subscribe((messages: Message[]) => {
      for (const message of messages) if (isControlMessage(message)) controls.push(message.headers.control)
    })
    const shape = new Shape(stream)
    try {
      expect(ids(await shape.rows)).toEqual([base, base + 1, base + 2, base + 3, base + 4])
      expect(shape.currentRows[0]).toMatchObject({ title: 'seed ' + base, priority: 5, labels: [] })

      await server.pool.query(
        `INSERT INTO issues (id, project_id, title, priority) VALUES (${base + 10}, 1000000001, 'new', 5), (${base + 11}, 1000000001, 'other', 1)`
      )
      await server.pool.query(`UPDATE issues SET title = 'renamed' WHERE id = ${base}`)
      await server.pool.query(`UPDATE issues SET priority = 5 WHERE id = ${base + 11}`)
      await server.pool.query(`UPDATE issues SET priority = 1 WHERE id = ${base + 1}`)
      await server.pool.query(`DELETE FROM issues WHERE id = ${base + 2}`)
      const expected = await expectedIds()
      await expect.poll(() => ids(shape.currentRows), { timeout: 10_000 }).toEqual(expected)
      expect(shape.currentRows.find((row) => Number(row.id) === base)?.title).toBe('renamed')

      const handle = stream.shapeHandle
      const dropped = await fetch(`${server.url}/v1/shape?handle=${handle}`, { method: 'DELETE' })
      expect(dropped.status).toBe(202)
      await server.pool.query(
        `INSERT INTO issues (id, project_id, title, priority) VALUES (${base + 20}, 1000000001, 'after refetch', 5)`
      )
      await expect.poll(() => controls.includes('must-refetch'), { timeout: 10_000 }).toBe(true)
      await expect.poll(() => ids(shape.currentRows), { timeout: 10_000 }).toEqual(await expectedIds())
      expect(stream.shapeHandle).not.toBe(handle)
    } finally {
      controller.abort()
    }
  })
})
