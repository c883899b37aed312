import { rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeCluster } from '../../src/main/db/cluster'
import type { EmbeddedPostgresHandle } from '../../src/main/db/embedded'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from '../support/postgres'
import { get } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { expectSyncsMatchTable, followToEnd } from './support/follow'
import { killPostgres, startAgain } from './support/postgres-process'

async function health(
  server: TestShapeServer
): Promise<{ status: number; body: { status: string; message?: string } }> {
  const response = await fetch(`${server.url}/v1/health`)
  return { status: response.status, body: (await response.json()) as { status: string; message?: string } }
}

describe('/v1/health and up-to-date with Postgres killed', () => {
  let database: TestPostgres
  let revived: EmbeddedPostgresHandle | null = null
  let server: TestShapeServer
  beforeAll(async () => {
    // kept down once killed: the test decides when it comes back (the app's own embedded Postgres restarts itself)
    database = await startTestPostgres({ restartOnCrash: false })
    const pool = new pg.Pool({ connectionString: database.url, max: 1 })
    ignoreConnectionErrors(pool)
    await pool.query('CREATE TABLE notes (id int PRIMARY KEY, body text)')
    await pool.query("INSERT INTO notes VALUES (1, 'one')")
    await pool.end()
    server = await startTestShapeServer({ database: database.url, longPollTimeout: 1000 })
  })
  afterAll(async () => {
    await server?.close()
    // the killed cluster's own handle would wait for an exit it already had: stop the revived one, remove the folder
    if (revived) {
      await revived.stop()
      await removeCluster(database.dataDir)
      await rm(dirname(database.dataDir), { recursive: true, force: true })
    } else await database?.destroy()
  })

  it('says waiting (503, with the reason) and answers no live request up-to-date until Postgres is back', async () => {
    expect(await health(server)).toEqual({ status: 200, body: { status: 'active' } })
    const synced = await followToEnd(server.url, { table: 'notes' })
    await killPostgres(database)

    await expect.poll(async () => (await health(server)).status, { timeout: 15_000 }).toBe(503)
    expect((await health(server)).body).toMatchObject({ status: 'waiting', message: expect.stringMatching(/Postgres/) })
    const live = await get(server.url, { table: 'notes', handle: synced.handle, offset: synced.offset, live: 'true' })
    expect(live.status).toBe(503)
    expect(live.header('retry-after')).not.toBeNull()
    expect(live.text).not.toContain('up-to-date')

    revived = await startAgain(database)
    await expect.poll(async () => (await health(server)).body.status, { timeout: 20_000 }).toBe('active')
    const pool = new pg.Pool({ connectionString: database.url, max: 1 })
    ignoreConnectionErrors(pool)
    try {
      await pool.query("INSERT INTO notes VALUES (2, 'after the restart')")
      await expectSyncsMatchTable(pool, 'notes', [{ url: server.url, from: synced }])
    } finally {
      await pool.end()
    }
  })
})
