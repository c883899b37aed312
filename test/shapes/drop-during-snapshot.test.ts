import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { get, materialise, shapeUrl, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

let server: TestShapeServer

beforeAll(async () => {
  server = await startTestShapeServer({ chunkBytes: 20_000 })
  await server.pool.query('CREATE TABLE life (id int PRIMARY KEY, grp int NOT NULL, pad text NOT NULL)')
  await server.pool.query(
    `INSERT INTO life SELECT g, g % 5, repeat(chr(97 + g % 26), 200) FROM generate_series(1, 40000) g`
  )
})

afterAll(async () => {
  await server.close()
})

const SHAPE = { table: 'life', where: 'grp <> 1' }

/** Every shape folder of the server's embedded database. */
async function shapeFolders(): Promise<string[]> {
  return readdir(join(server.dataDir, 'shapes', 'embedded', 'shapes')).catch(() => [])
}

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Bytes held in Buffers and ArrayBuffers once garbage is collected. */
function bufferBytes(): number {
  gc()
  gc()
  return process.memoryUsage().arrayBuffers
}

async function drop(handle: string): Promise<number> {
  const response = await fetch(shapeUrl(server.url, { ...SHAPE, handle }), { method: 'DELETE' })
  await response.text()
  return response.status
}

describe('DELETE while the snapshot is being written', () => {
  it('answers 202 every time, leaves no folder nor buffer behind, and a fresh read equals Postgres', async () => {
    const before = bufferBytes()
    const statuses: number[] = []
    for (let cycle = 0; cycle < 20; cycle++) {
      const first = await get(server.url, { ...SHAPE, offset: '-1' })
      expect(first.status).toBe(200)
      const handle = first.header('@handle') ?? ''
      statuses.push(await drop(handle))
      // a reader of the old handle is sent to refetch, to a new shape whose snapshot starts, and is dropped too
      const old = await get(server.url, { ...SHAPE, offset: '0_0', handle })
      expect(old.status).toBe(409)
      const next = old.header('@handle') ?? ''
      expect(next).not.toBe(handle)
      statuses.push(await drop(next))
    }
    expect(statuses).toEqual(Array(40).fill(202))
    await expect.poll(shapeFolders, { timeout: 10_000, interval: 100 }).toEqual([])
    expect(server.app.rooms.shapes.service()?.shapeCount).toBe(0)
    expect(bufferBytes() - before).toBeLessThan(16 * 1024 * 1024)
    const synced = await syncToEnd(server.url, SHAPE)
    const { rows } = await server.pool.query<{ id: number; grp: number; pad: string }>(
      'SELECT id, grp, pad FROM life WHERE grp <> 1'
    )
    expect(materialise(new Map(), synced.messages)).toEqual(
      new Map(
        rows.map((row) => [`"public"."life"/"${row.id}"`, { id: String(row.id), grp: String(row.grp), pad: row.pad }])
      )
    )
  })
})

describe('DELETE of a shape whose snapshot query is still running in Postgres', () => {
  it('cancels the query there, and the request waiting for the snapshot is sent to refetch', async () => {
    await syncToEnd(server.url, { table: 'life', where: 'id < 10' })
    const waiting = () =>
      server.pool
        .query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE application_name = 'syncscope-shapes' AND wait_event_type = 'Lock'"
        )
        .then(({ rows }) => rows.map((row) => row.pid))
    const locker = await server.pool.connect()
    try {
      await locker.query('BEGIN')
      await locker.query('LOCK TABLE life IN ACCESS EXCLUSIVE MODE')
      const shape = { table: 'life', where: 'id < 0' }
      const first = get(server.url, { ...shape, offset: '-1' })
      await expect.poll(waiting, { timeout: 10_000, interval: 50 }).toHaveLength(1)
      const [snapshotPid] = await waiting()
      const dropped = await fetch(shapeUrl(server.url, shape), { method: 'DELETE' })
      expect(dropped.status).toBe(202)
      // while the lock is still held, the snapshot's query no longer waits for it (the replacement shape's does)
      await expect.poll(waiting, { timeout: 5_000, interval: 50 }).not.toContain(snapshotPid)
      expect((await first).status).toBe(409)
    } finally {
      await locker.query('ROLLBACK')
      locker.release()
    }
    const served = (handle: string) => server.app.rooms.shapes.service()?.shapeByHandle(handle) !== undefined
    await expect
      .poll(async () => (await shapeFolders()).filter((handle) => !served(handle)), { timeout: 10_000, interval: 100 })
      .toEqual([])
  })
})
