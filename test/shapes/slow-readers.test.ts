import type { Socket } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { get, shapeUrl, syncToEnd } from '../support/shape-http'
import { slowReader } from '../support/slow-reader'

const READERS = 30
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Memory of Buffers, after a full garbage collection. */
function bufferMemory(): number {
  gc()
  gc()
  return process.memoryUsage().arrayBuffers
}

/** Growth of buffer memory while `READERS` slow clients wait on the answer at `url`, each answer about 10 MiB. */
async function growthWithSlowReaders(url: string): Promise<number> {
  const before = bufferMemory()
  const sockets: Socket[] = []
  try {
    for (let i = 0; i < READERS; i++) sockets.push(await slowReader(url))
    // every answer written as far as the connections take it
    await sleep(2_000)
    return bufferMemory() - before
  } finally {
    for (const socket of sockets) socket.destroy()
  }
}

describe('slow readers of one large chunk', () => {
  let server: TestShapeServer
  const shape = { table: 'big_rows' }
  let handle = ''

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1000 })
    await server.pool.query('CREATE TABLE big_rows (id int PRIMARY KEY, body text)')
    // ~12 MiB of rows: the snapshot's first chunk is a full 10 MiB one
    await server.pool.query('INSERT INTO big_rows SELECT g, repeat(md5(g::text), 8) FROM generate_series(1, 45000) g')
    const first = await get(server.url, { ...shape, offset: '-1' })
    handle = first.header('@handle') ?? ''
    expect(first.text.length).toBeGreaterThan(10 * 2 ** 20)
  })
  afterAll(async () => server?.close())

  it('share one buffer of a snapshot chunk instead of holding a copy each', async () => {
    const growth = await growthWithSlowReaders(shapeUrl(server.url, { ...shape, offset: '-1' }))
    expect(growth / 2 ** 20).toBeLessThan(40)
  })

  it('share one buffer of a main-log chunk read from disk', async () => {
    const synced = await syncToEnd(server.url, shape)
    expect(synced.handle).toBe(handle)
    await server.pool.query(
      'INSERT INTO big_rows SELECT g, repeat(md5(g::text), 8) FROM generate_series(100001, 145000) g'
    )
    await expect
      .poll(async () => (await get(server.url, { ...shape, offset: synced.offset, handle })).text.length, {
        timeout: 20_000
      })
      .toBeGreaterThan(10 * 2 ** 20)
    const growth = await growthWithSlowReaders(shapeUrl(server.url, { ...shape, offset: synced.offset, handle }))
    expect(growth / 2 ** 20).toBeLessThan(40)
  })
})
