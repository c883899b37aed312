import { monitorEventLoopDelay } from 'node:perf_hooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_LIKE_PATTERN_LENGTH } from '../../src/main/sql'
import { changes, controls, get, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

/** Shapes whose LIKE cannot be indexed and costs the most a pattern within the cap can: each is evaluated per change. */
const SHAPES = 64
/** The note's size: table data, not an input any cap bounds. About 9 ms of CPU per shape unloaded, ~0.6 s in all. */
const NOTE = 128 * 1024

describe('one change routed through many costly shapes', () => {
  let server: TestShapeServer
  const followed: Array<{ where: string; handle: string; offset: string }> = []

  beforeAll(async () => {
    server = await startTestShapeServer()
    await server.pool.query('CREATE TABLE notes (id int PRIMARY KEY, note text)')
    await server.pool.query(`INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 3) g`)
    const unit = 'a_'.repeat((MAX_LIKE_PATTERN_LENGTH - 8) / 2)
    for (let i = 0; i < SHAPES; i++) {
      const where = `note NOT LIKE '%${unit}${String(i).padStart(3, '0')}%'`
      const synced = await syncToEnd(server.url, { table: 'notes', where })
      followed.push({ where, handle: synced.handle, offset: synced.offset })
    }
  }, 180_000)

  afterAll(async () => server?.close())

  it('lets the event loop run between shapes, and every shape gets the change in its place in the log', async () => {
    const service = server.app.rooms.shapes.service()
    if (!service) throw new Error('no shape service')
    const before = service.globalLsn
    const delay = monitorEventLoopDelay({ resolution: 5 })
    delay.enable()
    await server.pool.query('UPDATE notes SET note = $1 WHERE id = 1', ['ab'.repeat(NOTE / 2)])
    await server.pool.query(`UPDATE notes SET note = 'after' WHERE id = 2`)
    await expect.poll(() => service.globalLsn > before, { timeout: 120_000, interval: 10 }).toBe(true)
    const applied = service.globalLsn
    // the second transaction too: the first one's routing did not let it overtake
    await server.pool.query(`UPDATE notes SET note = 'last' WHERE id = 3`)
    await expect.poll(() => service.globalLsn > applied, { timeout: 120_000, interval: 10 }).toBe(true)
    delay.disable()

    for (const shape of followed) {
      const response = await get(server.url, { table: 'notes', ...shape })
      expect(response.status, shape.where).toBe(200)
      expect(controls(response)).toContain('up-to-date')
      const keys = changes(response).map((message) => [message.key, message.headers.operation])
      expect(keys, shape.where).toEqual([
        ['"public"."notes"/"1"', 'update'],
        ['"public"."notes"/"2"', 'update'],
        ['"public"."notes"/"3"', 'update']
      ])
    }
    // Before, the whole change (every shape's LIKE against 128 KiB) ran in one turn of the event loop: ~0.6 s of CPU.
    // Routing now yields every few ms, so a timer waits at most a slice plus one shape's evaluation (~10 ms unloaded).
    expect(delay.max / 1e6).toBeLessThan(250)
  }, 300_000)
})
