import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from '../support/postgres'
import { get, syncToEnd } from '../support/shape-http'
import { startTestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'

/**
 * 14. As the reference (1.7.10 prunes subquery shapes on start): a subquery shape's dependency views live in memory,
 * so after a restart its clients get 409 and a fresh shape, which is right again; plain shapes survive as before.
 */
describe('subquery shapes across a restart of the server', () => {
  let database: TestPostgres
  let pool: pg.Pool
  beforeAll(async () => {
    database = await startTestPostgres()
    pool = new pg.Pool({ connectionString: database.url, max: 2 })
    ignoreConnectionErrors(pool)
    await pool.query('CREATE TABLE projects (id int PRIMARY KEY, archived boolean NOT NULL)')
    await pool.query('CREATE TABLE tasks (id int PRIMARY KEY, project_id int)')
    await pool.query('INSERT INTO projects VALUES (1, false), (2, true); INSERT INTO tasks VALUES (1, 1), (2, 2)')
  })
  afterAll(async () => {
    await pool?.end()
    await database?.destroy()
  })

  it('answers 409 must-refetch for a subquery shape after a restart, and the refetched shape equals Postgres', async () => {
    const shape = { table: 'tasks', where: 'project_id IN (SELECT id FROM projects WHERE NOT archived)' }
    const first = await startTestShapeServer({ database: database.url, longPollTimeout: 1000 })
    const plain = await syncToEnd(first.url, { table: 'projects' })
    const synced = await syncToEnd(first.url, shape)
    await first.stop()
    await pool.query('UPDATE projects SET archived = false WHERE id = 2')

    const second = await startTestShapeServer({ database: database.url, dataDir: first.dataDir, longPollTimeout: 1000 })
    try {
      const stale = await get(second.url, { ...shape, offset: synced.offset, handle: synced.handle })
      expect(stale.status).toBe(409)
      expect(stale.body).toEqual([{ headers: { control: 'must-refetch' } }])
      expect(stale.header('@handle')).not.toBe(synced.handle)
      expect((await get(second.url, { table: 'projects', offset: plain.offset, handle: plain.handle })).status).toBe(
        200
      )
      const client = new TagClient(second.url, shape)
      await client.sync()
      expect(client.ids()).toEqual(await idsOf(pool, `SELECT id FROM tasks WHERE ${shape.where}`))
      expect(client.ids()).toEqual(['1', '2'])
    } finally {
      await second.close()
    }
  })
})
