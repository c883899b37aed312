import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { describeWith } from '../support/facility-tests'
import { parseLsn } from '../../src/main/shapes/replication'
import { useTestDatabase } from '../support/test-database'
import { get } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { followToEnd, tableRows } from './support/follow'

/** A small tmpfs as the data folder (the `tmpfs` facility). */
function mountSmallDisk(): { dir: string; unmount(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'syncscope-full-disk-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir], { stdio: 'pipe' })
  return {
    dir,
    unmount() {
      execFileSync('umount', ['-l', dir])
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** Writes `file` until the disk refuses another byte. */
function fillDisk(file: string): void {
  const fd = openSync(file, 'w')
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const block = Buffer.alloc(size, 120)
      try {
        for (;;) writeSync(fd, block)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
      }
    }
  } finally {
    closeSync(fd)
  }
}

describeWith(['tmpfs'], 'a full disk under the data folder', () => {
  const database = useTestDatabase([
    'CREATE TABLE notes (id int PRIMARY KEY, body text)',
    "INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 50) g"
  ])
  let server: TestShapeServer | null = null
  let disk: ReturnType<typeof mountSmallDisk> | null = null
  afterAll(async () => {
    await server?.close()
    disk?.unmount()
  })

  it('refuses to go on with the cause in health, acknowledges nothing unwritten, and recovers once there is space', async () => {
    disk = mountSmallDisk()
    const logged: string[] = []
    server = await startTestShapeServer({
      database: database.url,
      dataDir: disk.dir,
      longPollTimeout: 1000,
      log: (line) => logged.push(line)
    })
    const synced = await followToEnd(server.url, { table: 'notes' })
    const filler = join(disk.dir, 'filler')
    fillDisk(filler)

    await database.pool.query(
      "INSERT INTO notes SELECT g, repeat('written to a full disk ', 20) FROM generate_series(100, 199) g"
    )
    const written = parseLsn(
      (await database.pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn
    )
    await expect.poll(async () => (await fetch(`${server!.url}/v1/health`)).status, { timeout: 15_000 }).toBe(503)
    const health = (await (await fetch(`${server.url}/v1/health`)).json()) as { status: string; message: string }
    expect(health).toMatchObject({ status: 'stalled', message: expect.stringMatching(/ENOSPC|no space/i) })
    const live = await get(server.url, { table: 'notes', handle: synced.handle, offset: synced.offset, live: 'true' })
    expect(live.status).toBe(503)
    expect(live.text).not.toContain('up-to-date')
    const confirmed = async (): Promise<bigint> =>
      parseLsn(
        (
          await database.pool.query<{ lsn: string }>(
            "SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name LIKE 'syncscope_%'"
          )
        ).rows[0]!.lsn
      )
    // the transaction failed to be written, and again after the consumer reconnected: neither attempt may acknowledge it
    await expect
      .poll(() => logged.filter((line) => /interrupted: applying transaction \d+ failed/.test(line)).length)
      .toBeGreaterThan(1)
    expect(await confirmed()).toBeLessThan(written)

    rmSync(filler)
    await expect
      .poll(async () => ((await (await fetch(`${server!.url}/v1/health`)).json()) as { status: string }).status, {
        timeout: 20_000
      })
      .toBe('active')
    const want = await tableRows(database.pool, 'notes')
    await expect
      .poll(async () => (await followToEnd(server!.url, { table: 'notes' }, synced)).rows, { timeout: 10_000 })
      .toEqual(want)
    await expect.poll(confirmed, { timeout: 15_000 }).toBeGreaterThanOrEqual(written)
  })
})
