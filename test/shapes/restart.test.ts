import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { useTestDatabase } from '../support/test-database'
import { startTestShapeServer } from '../support/shape-server'
import { changes, get, syncToEnd } from '../support/shape-http'

describe('shape logs across a restart of the server', () => {
  const database = useTestDatabase([
    'CREATE TABLE notes (id int PRIMARY KEY, body text)',
    "INSERT INTO notes VALUES (1, 'one')"
  ])

  it('continues a handle and offset after a restart, with the changes made while it was down', async () => {
    const serverLog: string[] = []
    const log = (line: string) => serverLog.push(line)
    const first = await startTestShapeServer({ database: database.url, longPollTimeout: 1000, log })
    const dataDir = first.dataDir
    const synced = await syncToEnd(first.url, { table: 'notes' })
    const live = get(first.url, { table: 'notes', offset: synced.offset, handle: synced.handle, live: 'true' })
    await database.pool.query("INSERT INTO notes VALUES (2, 'two')")
    const [two] = changes(await live)
    expect(two?.key).toBe('"public"."notes"/"2"')
    const offset =
      (await get(first.url, { table: 'notes', offset: synced.offset, handle: synced.handle })).header('@offset') ?? ''
    await first.stop()

    await database.pool.query("INSERT INTO notes VALUES (3, 'three')")
    await database.pool.query("UPDATE notes SET body = 'uno' WHERE id = 1")
    const second = await startTestShapeServer({ database: database.url, dataDir, longPollTimeout: 1000, log })
    try {
      // the changes made while it was down arrive through the slot, moments after the start
      await expect
        .poll(async () => {
          const replay = await get(second.url, { table: 'notes', offset: synced.offset, handle: synced.handle })
          return [replay.status, ...changes(replay).map((change) => change.key)]
        })
        .toEqual([200, '"public"."notes"/"2"', '"public"."notes"/"3"', '"public"."notes"/"1"'])
        .catch((error: Error) => {
          // the server's own account of why the shape did not come back
          throw new Error(`${error.message}\nlog of both servers:\n${serverLog.join('\n')}`)
        })
      const caughtUp = await get(second.url, { table: 'notes', offset, handle: synced.handle, live: 'true' })
      expect(changes(caughtUp).map((change) => [change.headers.operation, change.value])).toEqual([
        ['insert', { id: '3', body: 'three' }],
        ['update', { id: '1', body: 'uno' }]
      ])
    } finally {
      await second.stop()
    }

    const shapesDir = join(dataDir, 'shapes')
    const [databaseFolder] = readdirSync(shapesDir)
    await rm(join(shapesDir, databaseFolder ?? '', 'shapes', synced.handle), { recursive: true, force: true })
    const third = await startTestShapeServer({ database: database.url, dataDir, longPollTimeout: 1000 })
    try {
      const gone = await get(third.url, { table: 'notes', offset, handle: synced.handle })
      expect(gone.status).toBe(409)
      const fresh = await syncToEnd(third.url, { table: 'notes' })
      expect(fresh.handle).not.toBe(synced.handle)
      expect(fresh.messages.filter((message) => message.key).map((message) => message.value)).toEqual([
        { id: '2', body: 'two' },
        { id: '3', body: 'three' },
        { id: '1', body: 'uno' }
      ])
    } finally {
      await third.close()
    }
  })

  it('invalidates every shape when the replication slot is gone, and keeps serving', async () => {
    const server = await startTestShapeServer({ database: database.url, longPollTimeout: 1000 })
    try {
      const synced = await syncToEnd(server.url, { table: 'notes' })
      // the consumer reconnects within a fraction of a second: terminate and drop until the drop wins the race
      await expect
        .poll(
          async () => {
            await database.pool.query(
              "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name LIKE 'syncscope_%' AND active_pid IS NOT NULL"
            )
            return database.pool
              .query(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'syncscope_%'"
              )
              .then(
                () => 'dropped',
                (error: Error) => error.message
              )
          },
          { timeout: 10_000, interval: 20 }
        )
        .toBe('dropped')
      await expect
        .poll(
          async () => (await get(server.url, { table: 'notes', offset: synced.offset, handle: synced.handle })).status,
          { timeout: 15_000 }
        )
        .toBe(409)
      const fresh = await syncToEnd(server.url, { table: 'notes' })
      const live = get(server.url, { table: 'notes', offset: fresh.offset, handle: fresh.handle, live: 'true' })
      await database.pool.query("INSERT INTO notes VALUES (4, 'after the slot came back')")
      expect(changes(await live).map((change) => change.value)).toEqual([{ id: '4', body: 'after the slot came back' }])
    } finally {
      await server.close()
    }
  })
})
