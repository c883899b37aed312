/**
 * Target 7 (issue 12 (c)): 100 slow readers of one 10 MiB chunk — clients that ask for it and then do not read — and
 * how much the server's resident memory grows while they wait: once for the snapshot's first chunk (`offset=-1`),
 * once for a 10 MiB range of the main log read from disk (a catch-up). The readers are raw sockets in this process,
 * paused: what they do not read stays in the kernel's socket buffers and in the server.
 */
import type { Socket } from 'node:net'
import { startTestShapeServer } from '../test/support/shape-server'
import { get, shapeUrl, syncToEnd } from '../test/support/shape-http'
import { slowReader } from '../test/support/slow-reader'

type Report = (line: string) => void

const READERS = 100
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resident set and Buffer memory after full collections. */
function memory(): { rss: number; buffers: number } {
  globalThis.gc?.()
  globalThis.gc?.()
  const usage = process.memoryUsage()
  return { rss: usage.rss, buffers: usage.arrayBuffers }
}

/** Growth (MiB) while READERS slow readers wait on `url`, measured after the server wrote what it could. */
async function growth(url: string): Promise<{ before: number; growth: number; buffers: number }> {
  const before = memory()
  const sockets: Socket[] = []
  try {
    for (let i = 0; i < READERS; i++) sockets.push(await slowReader(url))
    await sleep(3_000)
    const after = memory()
    return {
      before: before.rss / 2 ** 20,
      growth: (after.rss - before.rss) / 2 ** 20,
      buffers: (after.buffers - before.buffers) / 2 ** 20
    }
  } finally {
    for (const socket of sockets) socket.destroy()
    await sleep(500)
  }
}

export async function slowReaders(report: Report): Promise<void> {
  const server = await startTestShapeServer({ longPollTimeout: 20_000 })
  try {
    const shape = { table: 'slow_rows' }
    await server.pool.query('CREATE TABLE slow_rows (id int PRIMARY KEY, body text)')
    await server.pool.query('INSERT INTO slow_rows SELECT g, repeat(md5(g::text), 8) FROM generate_series(1, 45000) g')
    const synced = await syncToEnd(server.url, shape)
    const snapshot = await growth(shapeUrl(server.url, { ...shape, offset: '-1' }))
    await server.pool.query(
      'INSERT INTO slow_rows SELECT g, repeat(md5(g::text), 8) FROM generate_series(100001, 145000) g'
    )
    for (;;) {
      const caughtUp = await get(server.url, { ...shape, offset: synced.offset, handle: synced.handle })
      if (caughtUp.text.length > 10 * 2 ** 20) break
      await sleep(200)
    }
    const log = await growth(shapeUrl(server.url, { ...shape, offset: synced.offset, handle: synced.handle }))
    const mib = (value: number) => `${value.toFixed(1)} MiB`
    report(
      `| 7. ${READERS} slow readers of one 10 MiB chunk | RSS growth **${mib(snapshot.growth)}** (snapshot chunk, from ${mib(snapshot.before)}), **${mib(log.growth)}** (main-log range from disk, from ${mib(log.before)}) | Buffer memory growth ${mib(snapshot.buffers)} and ${mib(log.buffers)}; readers ask and never read | ≤ 64 MiB |`
    )
  } finally {
    await server.close()
  }
}
