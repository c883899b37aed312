import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ShapeState } from '../../src/shared/protocol/debug-shapes'
import { allPages, debugShapes, entry } from '../support/debug-shapes'
import { shapeUrl, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { useTestDatabase } from '../support/test-database'

describe('GET /v1/debug/shapes: paging while shapes are used and dropped, and the replication slots', () => {
  let server: TestShapeServer
  const sql = (text: string, values: unknown[] = []) => server.pool.query(text, values)

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 20_000 })
  })
  afterAll(async () => {
    await sql(
      "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'inventory_lagging'"
    ).catch(() => undefined)
    await server?.close()
  })

  it('needs no secret when the server has none; paging goes on where it was when shapes are used or dropped between pages', async () => {
    const made: Array<{ where: string; handle: string; offset: string }> = []
    for (let index = 0; index < 9; index++) {
      const where = `priority = ${100 + index}`
      const synced = await syncToEnd(server.url, { table: 'issues', where })
      made.push({ where, handle: synced.handle, offset: synced.offset })
    }
    const first = await debugShapes(server, { limit: '4' })
    expect(first.status).toBe(200)
    const page = first.state()
    expect(page.shapes.map((shape) => shape.handle)).toEqual(made.slice(0, 4).map((shape) => shape.handle))
    // the cursor's own shape dropped, a shape not listed yet used (it moves to the end of the order)
    await fetch(shapeUrl(server.url, { handle: made[3]!.handle }), { method: 'DELETE' })
    await syncToEnd(server.url, { table: 'issues', where: made[5]!.where })
    const rest = await allPages(server, 2, { after: page.next ?? '' })
    const listed = rest.flatMap((state) => state.shapes.map((shape) => shape.handle))
    expect(listed).toEqual([4, 6, 7, 8, 5].map((index) => made[index]!.handle))
  })

  it("reports each slot's lag and retained WAL as Postgres does, with a warning before a lagging slot hurts", async () => {
    const created = await sql("SELECT pg_create_logical_replication_slot('inventory_lagging', 'pgoutput') AS slot")
    const createdAt = (created.rows[0] as { slot: string }).slot.replace(/^\(.*,(.*)\)$/, '$1')
    // at least 8 MiB of WAL that the second slot's consumer never confirms, measured by Postgres's own LSNs
    const MIB = 1024 * 1024
    const walSince = async (lsn: string) =>
      Number((await sql('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint::text AS made', [lsn])).rows[0].made)
    const makeWal = async (bytes: number) => {
      const { rows } = await sql('SELECT pg_current_wal_lsn()::text AS lsn')
      while ((await walSince(rows[0].lsn)) < bytes)
        await sql("SELECT pg_logical_emit_message(false, 'inventory', repeat(md5(random()::text), 32768))")
    }
    /**
     * Our slot keeps the WAL back to its restart_lsn, which moves on only at a running-transactions record Postgres
     * writes every 15 s: one is asked for until the WAL made is no longer held for it.
     */
    const ourSlotCaughtUp = () =>
      expect
        .poll(async () => {
          await sql('SELECT pg_log_standby_snapshot()')
          const state = (await debugShapes(server, { limit: '0' })).state()
          return state.replication.slots.find((slot) => slot.ours)?.retained_wal_bytes
        })
        .toBeLessThan(MIB)
    await makeWal(8 * MIB)
    const made = await walSince(createdAt)
    await ourSlotCaughtUp()
    const postgresFigures = async () =>
      (
        await sql(
          `SELECT slot_name, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint::text AS lag,
                  pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint::text AS retained, wal_status
             FROM pg_replication_slots WHERE slot_name = 'inventory_lagging'`
        )
      ).rows[0] as { lag: string; retained: string; wal_status: string }
    const before = await postgresFigures()
    const state = (await debugShapes(server, { limit: '0' })).state()
    const after = await postgresFigures()
    const lagging = state.replication.slots.find((slot) => slot.slot_name === 'inventory_lagging')
    expect(lagging).toMatchObject({
      ours: false,
      active: false,
      slot_type: 'logical',
      plugin: 'pgoutput',
      walsender: null
    })
    expect(lagging?.lag_bytes).toBeGreaterThanOrEqual(made)
    // WAL goes on being written (checkpoints, other tests' work): between what Postgres said just before and just after
    expect(lagging?.lag_bytes).toBeGreaterThanOrEqual(Number(before.lag))
    expect(lagging?.lag_bytes).toBeLessThanOrEqual(Number(after.lag))
    expect(lagging?.retained_wal_bytes).toBeGreaterThanOrEqual(Number(before.retained))
    expect(lagging?.retained_wal_bytes).toBeLessThanOrEqual(Number(after.retained))
    expect(lagging?.wal_status).toBe(before.wal_status)

    // our own slot: followed, streaming, and its figures are Postgres's own arithmetic on the LSNs it reports
    const ours = state.replication.slots.find((slot) => slot.ours)
    expect(ours?.slot_name).toBe(state.replication.slot_name)
    expect(ours?.slot_name).toMatch(/^syncscope_/)
    expect(ours).toMatchObject({ active: true, slot_type: 'logical', walsender: { state: 'streaming' } })
    const lsn = (text: string | null | undefined) => {
      const [high, low] = (text ?? '0/0').split('/')
      return Number((BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`))
    }
    expect(ours?.lag_bytes).toBe(lsn(state.replication.current_wal_lsn) - lsn(ours?.confirmed_flush_lsn))
    expect(ours?.retained_wal_bytes).toBe(lsn(state.replication.current_wal_lsn) - lsn(ours?.restart_lsn))

    // unlimited max_slot_wal_keep_size, 8 MiB against the free disk (local: known) is no cause for a warning yet
    expect(state.replication.max_slot_wal_keep_size_bytes).toBeNull()
    expect(state.replication.wal_disk_free_bytes).toBeGreaterThan(0)
    expect(state.replication.warnings).toEqual([])

    // with max_slot_wal_keep_size at 16 MiB, 8 MiB retained is half of it: a warning naming the slot
    await sql("ALTER SYSTEM SET max_slot_wal_keep_size = '16MB'")
    await sql('SELECT pg_reload_conf()')
    try {
      await expect
        .poll(async () => (await debugShapes(server, { limit: '0' })).state().replication.max_slot_wal_keep_size_bytes)
        .toBe(16 * MIB)
      const warned = (await debugShapes(server, { limit: '0' })).state().replication
      expect(warned.warnings).toEqual([
        {
          slot_name: 'inventory_lagging',
          level: 'warning',
          message: expect.stringMatching(
            /^slot inventory_lagging \(no consumer connected\) retains .* of max_slot_wal_keep_size 16 MiB/
          )
        }
      ])
      // past it, the slot's WAL is no longer reserved: critical
      for (let segment = 0; segment < 3; segment++) {
        await makeWal(8 * MIB)
        await sql('SELECT pg_switch_wal()')
      }
      await ourSlotCaughtUp()
      const status = (await postgresFigures()).wal_status
      expect(['unreserved', 'lost']).toContain(status)
      const critical = (await debugShapes(server, { limit: '0' })).state().replication
      expect(critical.slots.find((slot) => slot.slot_name === 'inventory_lagging')?.wal_status).toBe(status)
      expect(critical.warnings).toContainEqual({
        slot_name: 'inventory_lagging',
        level: 'critical',
        message: expect.stringMatching(
          /^slot inventory_lagging (retains .* past max_slot_wal_keep_size|is invalidated)/
        )
      })
      expect(critical.warnings.filter((warning) => warning.slot_name !== 'inventory_lagging')).toEqual([])
    } finally {
      await sql('ALTER SYSTEM RESET max_slot_wal_keep_size')
      await sql('SELECT pg_reload_conf()')
    }
  })
})

describe('GET /v1/debug/shapes after a restart', () => {
  const database = useTestDatabase([
    'CREATE TABLE inventory_notes (id int PRIMARY KEY, body text)',
    "INSERT INTO inventory_notes VALUES (1, 'one'), (2, 'two')"
  ])

  it('lists the restored shapes oldest first, last changed when their log was last written, not used since', async () => {
    const first = await startTestShapeServer({ database: database.url })
    const dataDir = first.dataDir
    let second: TestShapeServer | null = null
    try {
      const quiet = await syncToEnd(first.url, { table: 'inventory_notes', where: 'id = 1' })
      const changed = await syncToEnd(first.url, { table: 'inventory_notes', where: 'id = 2' })
      await database.pool.query("UPDATE inventory_notes SET body = 'deux' WHERE id = 2")
      await expect.poll(async () => entry((await debugShapes(first)).state(), changed.handle)?.log_entries).toBe(1)
      const before = entry((await debugShapes(first)).state(), changed.handle) as ShapeState
      await first.stop()

      second = await startTestShapeServer({ database: database.url, dataDir })
      const state = (await debugShapes(second)).state()
      expect(state.shapes.map((shape) => [shape.handle, shape.eviction_rank, shape.last_used_at])).toEqual([
        [quiet.handle, 1, null],
        [changed.handle, 2, null]
      ])
      const restored = entry(state, changed.handle) as ShapeState
      expect(restored).toMatchObject({ log_entries: 1, latest_offset: before.latest_offset, phase: 'ready' })
      // log.jsonl's mtime: written when the change was appended, a moment before the answer said so
      expect(
        Math.abs(Date.parse(restored.last_change_at ?? '') - Date.parse(before.last_change_at ?? ''))
      ).toBeLessThan(2000)
      expect(entry(state, quiet.handle)?.last_change_at).toBeNull()
    } finally {
      await second?.close()
      // the first owns the data folder: it removes it
      await first.close()
    }
  })
})
