import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPostgres, type TestPostgres } from '../support/postgres'
import { startWithoutLogicalWal } from '../support/replication'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

describe('a database the shape server cannot follow', () => {
  let database: TestPostgres
  let replicaOnly: { stop(): Promise<void> }
  let server: TestShapeServer
  beforeAll(async () => {
    database = await startTestPostgres()
    await database.stop()
    replicaOnly = await startWithoutLogicalWal(database)
    server = await startTestShapeServer({ database: database.url })
  })
  afterAll(async () => {
    await server?.close()
    await replicaOnly?.stop()
    await database?.destroy()
  })

  it('keeps the app working and answers shape requests with 503 saying why', async () => {
    const shape = await fetch(`${server.url}/v1/shape?table=anything&offset=-1`)
    expect(shape.status).toBe(503)
    expect(((await shape.json()) as { message: string }).message).toMatch(/cannot follow this database: .*wal_level/)
    const health = await fetch(`${server.url}/v1/health`)
    expect(health.status).toBe(503)
    expect(await health.json()).toMatchObject({
      status: 'unavailable',
      message: expect.stringMatching(/wal_level = logical/)
    })
    const sql = await server.app.dispatch('db.query', { sql: 'SELECT 1 AS one' })
    expect(sql.ok).toBe(true)
  })
})
