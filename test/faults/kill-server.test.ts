import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { findFreePort } from '../../src/main/net/free-port'
import { expectClientsMatchPostgres } from '../support/converge'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from '../support/postgres'
import { followShape } from '../support/protocol-follower'
import { ITEM_SHAPES, expectedItems, sleep, writeRandomItems } from '../support/random-writes'
import { kill9, startServe } from '../support/serve-process'

describe('kill -9 of syncscope serve in the middle of random writes', () => {
  let database: TestPostgres | null = null
  let server: ChildProcess | null = null
  let dataDir: string | null = null
  afterEach(async () => {
    if (server && server.exitCode === null) await kill9(server)
    await database?.destroy()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  it('clients resume with their handle and offset: nothing lost, nothing twice, the rows of Postgres', async () => {
    database = await startTestPostgres()
    const pool = new pg.Pool({ connectionString: database.url, max: 4 })
    ignoreConnectionErrors(pool)
    await pool.query('CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, val int, note text)')
    await pool.query("INSERT INTO items SELECT g, g % 4, g % 100, 'n' || (g % 30) FROM generate_series(0, 59) g")
    dataDir = await mkdtemp(join(tmpdir(), 'syncscope-kill-'))
    const port = await findFreePort()
    const base = `http://127.0.0.1:${port}`
    server = await startServe(database.url, dataDir, port, ['--long-poll-timeout', '1000'])

    const controller = new AbortController()
    const clients = ITEM_SHAPES.map((shape) => ({ shape, ...followShape(base, shape, controller.signal) }))
    await expect.poll(() => clients.every((client) => client.handles.size === 1), { timeout: 30_000 }).toBe(true)
    const writers = Promise.all([writeRandomItems(pool, 200, 7, 15), writeRandomItems(pool, 200, 11, 15)])
    for (let kill = 0; kill < 2; kill++) {
      await sleep(1500)
      await kill9(server)
      server = await startServe(database.url, dataDir, port, ['--long-poll-timeout', '1000'])
    }
    await writers
    try {
      await expectClientsMatchPostgres(database.url, clients, {
        rows: (client) => client.rows,
        expected: (check, client) => expectedItems(check, client.shape),
        label: (client) => JSON.stringify(client.shape),
        anomalies: (client) => client.anomalies,
        timeout: 30_000
      })
      for (const client of clients) {
        expect(client.conflicts(), `409s of ${JSON.stringify(client.shape)}`).toBe(0)
        expect(client.handles.size).toBe(1)
      }
    } finally {
      controller.abort()
      await Promise.all(clients.map((client) => client.done))
      await pool.end()
    }
  })
})
