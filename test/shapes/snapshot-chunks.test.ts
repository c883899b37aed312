import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BufferPool } from '../../src/main/shapes/storage/buffer-pool'
import { materialise, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const CHUNK_BYTES = 64 * 1024

let server: TestShapeServer

beforeAll(async () => {
  server = await startTestShapeServer({ chunkBytes: CHUNK_BYTES })
  await server.pool.query('CREATE TABLE many (id int PRIMARY KEY, grp int NOT NULL, label text NOT NULL)')
  await server.pool.query(
    `INSERT INTO many SELECT g, g % 4, 'label "' || g || '" / ' || repeat('x', g % 97) FROM generate_series(1, 20000) g`
  )
})

afterAll(async () => {
  await server.close()
})

async function expected(where: string): Promise<Map<string, Record<string, string | null>>> {
  const { rows } = await server.pool.query<{ id: number; grp: number; label: string }>(
    `SELECT id, grp, label FROM many WHERE ${where}`
  )
  return new Map(
    rows.map((row) => [`"public"."many"/"${row.id}"`, { id: String(row.id), grp: String(row.grp), label: row.label }])
  )
}

describe('snapshot chunks served from memory and from disk', () => {
  it('gives clients syncing at once, and one syncing later, the same rows as Postgres, chunk after chunk', async () => {
    for (const where of ['grp = 1', 'grp <> 1', 'true']) {
      const shape = { table: 'many', where }
      const [first, second] = await Promise.all([syncToEnd(server.url, shape), syncToEnd(server.url, shape)])
      const later = await syncToEnd(server.url, shape)
      const rows = await expected(where)
      for (const synced of [first, second, later]) {
        expect(synced.requests).toBeGreaterThan(5)
        expect(materialise(new Map(), synced.messages)).toEqual(rows)
      }
      expect(second.messages).toEqual(first.messages)
      expect(later.messages).toEqual(first.messages)
    }
  })
})

describe('a chunk a slow client is still reading', () => {
  it('keeps its bytes while the snapshot goes on building chunks in pooled buffers', async () => {
    const big = await startTestShapeServer({ chunkBytes: 4 * 1024 * 1024 })
    try {
      await big.pool.query('CREATE TABLE wide (id int PRIMARY KEY, body text NOT NULL)')
      await big.pool.query(`INSERT INTO wide SELECT g, repeat(chr(97 + g % 26), 200) FROM generate_series(1, 80000) g`)
      const { hostname, port } = new URL(big.url)
      const socket = connect(Number(port), hostname)
      socket.write(`GET /v1/shape?table=wide&offset=-1 HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`)
      const parts: Buffer[] = []
      socket.on('data', (chunk: Buffer) => parts.push(chunk))
      await new Promise((resolve) => socket.once('data', resolve))
      socket.pause()
      // meanwhile the snapshot writes its other chunks (and another shape its own) in buffers from the same pool
      await syncToEnd(big.url, { table: 'wide', where: 'id % 2 = 0' })
      socket.resume()
      let text = ''
      for (;;) {
        text = Buffer.concat(parts).toString()
        const headEnd = text.indexOf('\r\n\r\n')
        const length = Number(/content-length: (\d+)/i.exec(text)?.[1])
        if (headEnd !== -1 && Buffer.byteLength(text) >= headEnd + 4 + length) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      socket.destroy()
      const messages = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Array<{
        value: { id: string; body: string }
      }>
      expect(messages.length).toBeGreaterThan(10000)
      messages.forEach((message, index) => {
        expect(message.value.id).toBe(String(index + 1))
        expect(message.value.body).toBe(String.fromCharCode(97 + ((index + 1) % 26)).repeat(200))
      })
    } finally {
      await big.close()
    }
  })
})

describe('BufferPool', () => {
  it('hands out buffers of its size, takes back only those, keeps a few and drops them when idle', async () => {
    const pool = new BufferPool(1024, 2, 50)
    const [a, b, c] = [pool.take(), pool.take(), pool.take()]
    expect([a.length, b.length, c.length]).toEqual([1024, 1024, 1024])
    pool.give(Buffer.alloc(2048))
    pool.give(a)
    pool.give(b)
    pool.give(c)
    const reused = [pool.take(), pool.take(), pool.take()]
    expect(reused.slice(0, 2)).toEqual(expect.arrayContaining([a, b]))
    expect(reused[0] === a || reused[0] === b).toBe(true)
    expect(reused[2] === c || reused[2] === a || reused[2] === b).toBe(false)
    pool.give(a)
    await new Promise((resolve) => setTimeout(resolve, 120))
    expect(pool.take()).not.toBe(a)
  })
})
