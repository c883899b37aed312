import pg from 'pg'
import { afterEach, describe, it } from 'vitest'
import { expectClientsMatchPostgres } from '../support/converge'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from '../support/postgres'
import { restartPostgres } from '../support/replication'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { followShape } from '../support/protocol-follower'
import {
  ITEM_SHAPES as SHAPES,
  expectedItems as expected,
  sleep,
  writeRandomItems as write
} from '../support/random-writes'

describe('nothing lost', () => {
  let database: TestPostgres | null = null
  let server: TestShapeServer | null = null
  let restarted: { stop(): Promise<void> } | null = null
  afterEach(async () => {
    await server?.close()
    await restarted?.stop()
    await database?.destroy()
    server = null
    restarted = null
    database = null
  })

  async function run(restartInTheMiddle: boolean): Promise<void> {
    database = await startTestPostgres()
    const setup = new pg.Pool({ connectionString: database.url, max: 4 })
    ignoreConnectionErrors(setup)
    await setup.query('CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, val int, note text)')
    await setup.query("INSERT INTO items SELECT g, g % 4, g % 100, 'n' || (g % 30) FROM generate_series(0, 59) g")
    server = await startTestShapeServer({ database: database.url, longPollTimeout: 1000 })
    const controller = new AbortController()
    const clients = SHAPES.map((shape) => ({ shape, ...followShape(server!.url, shape, controller.signal) }))
    const writers = Promise.all([write(setup, 150, 7), write(setup, 150, 11)])
    if (restartInTheMiddle) {
      await sleep(400)
      restarted = await restartPostgres(database)
    }
    await writers
    await setup.end()
    try {
      await expectClientsMatchPostgres(database.url, clients, {
        rows: (client) => client.rows,
        expected: (check, client) => expected(check, client.shape),
        label: (client) => JSON.stringify(client.shape),
        anomalies: (client) => client.anomalies
      })
    } finally {
      controller.abort()
      await Promise.all(clients.map((client) => client.done))
    }
  }

  it('every client ends with exactly the rows of its shape after concurrent random transactions', () => run(false))
  it('and so after a Postgres restart in the middle', () => run(true))
})
