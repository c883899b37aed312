import net, { type AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import pg from 'pg'
import { CopyOut } from '../../src/main/shapes/snapshot/copy-out'
import { reusedReadSocket } from '../../src/main/shapes/snapshot/reused-read-socket'
import { ignoreConnectionErrors } from '../support/postgres'
import { useTestDatabase } from '../support/test-database'

const postgres = useTestDatabase()
type ReadBuffers = 'fresh' | 'reused'
let reusedPool: pg.Pool | null = null
afterAll(() => reusedPool?.end())

/** A pool on pg's own sockets (a fresh buffer per read) or on the shape service's (one buffer reused for every read). */
function poolWith(buffers: ReadBuffers): pg.Pool {
  if (buffers === 'fresh') return postgres.pool
  if (!reusedPool) {
    reusedPool = new pg.Pool({ connectionString: postgres.url, max: 2, stream: reusedReadSocket })
    ignoreConnectionErrors(reusedPool)
  }
  return reusedPool
}
let buffersInUse: ReadBuffers = 'fresh'

/** Runs `use` on a pooled connection, then checks the connection still answers a query. */
async function withClient(use: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await poolWith(buffersInUse).connect()
  try {
    await use(client)
    expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).toBe(1)
  } finally {
    client.release()
  }
}

async function copyLines(client: pg.PoolClient, sql: string): Promise<{ lines: string[]; batches: number }> {
  const copy = client.query(new CopyOut(sql))
  const parts: Buffer[] = []
  for await (const batch of copy.batches()) parts.push(Buffer.from(batch))
  const text = Buffer.concat(parts).toString()
  return { lines: text === '' ? [] : text.slice(0, -1).split('\n'), batches: parts.length }
}

describe.each(['fresh', 'reused'] as const)('CopyOut on sockets with %s read buffers', (buffers) => {
  beforeAll(() => {
    buffersInUse = buffers
  })

  it('yields every line of a COPY, in order, and leaves the connection usable', async () => {
    await withClient(async (client) => {
      const { lines, batches } = await copyLines(
        client,
        'COPY (SELECT g, repeat(chr(65 + g % 26), g % 50) FROM generate_series(1, 50000) g) TO STDOUT'
      )
      expect(lines).toHaveLength(50000)
      expect(batches).toBeGreaterThan(1)
      lines.forEach((line, index) => {
        const g = index + 1
        expect(line).toBe(`${g}\t${String.fromCharCode(65 + (g % 26)).repeat(g % 50)}`)
      })
    })
  })

  it('reassembles rows larger than one socket read', async () => {
    await withClient(async (client) => {
      const { lines } = await copyLines(
        client,
        "COPY (SELECT g, repeat('x', 300000 + g) FROM generate_series(1, 12) g) TO STDOUT"
      )
      expect(lines.map((line) => line.length)).toEqual(
        Array.from({ length: 12 }, (_, i) => `${i + 1}\t`.length + 300001 + i)
      )
    })
  })

  it('fails with the error Postgres raises mid-copy, and the connection recovers', async () => {
    await withClient(async (client) => {
      await expect(
        copyLines(client, 'COPY (SELECT g, 1 / (20000 - g) FROM generate_series(1, 30000) g) TO STDOUT')
      ).rejects.toThrow(/division by zero/)
      await expect(copyLines(client, 'COPY (SELECT * FROM no_such_table) TO STDOUT')).rejects.toThrow(/does not exist/)
    })
  })

  it('reads and drops the rest of a copy whose consumer stops early', async () => {
    await withClient(async (client) => {
      const copy = client.query(
        new CopyOut("COPY (SELECT g, repeat('y', 100) FROM generate_series(1, 200000) g) TO STDOUT")
      )
      for await (const batch of copy.batches()) {
        expect(batch.length).toBeGreaterThan(0)
        break
      }
    })
  })

  it('grows a batch that falls behind into pooled buffers, which the next copy takes again', async () => {
    const sql = "COPY (SELECT g, repeat('z', 200) FROM generate_series(1, 100000) g) TO STDOUT"
    const slowly = async (client: pg.PoolClient): Promise<number> => {
      let largest = 0
      for await (const batch of client.query(new CopyOut(sql)).batches()) {
        largest = Math.max(largest, batch.length)
        await new Promise((resolve) => setTimeout(resolve, 40))
      }
      return largest
    }
    await withClient(async (client) => {
      expect(await slowly(client)).toBeGreaterThan(1024 * 1024)
      const allocate = vi.spyOn(Buffer, 'allocUnsafe')
      try {
        expect(await slowly(client)).toBeGreaterThan(1024 * 1024)
        expect(allocate.mock.calls.filter(([size]) => size > 1024 * 1024)).toEqual([])
      } finally {
        allocate.mockRestore()
      }
    })
  })

  it('keeps its buffers while it drops the rest of a copy: a copy that starts meanwhile gets every line', async () => {
    const pool = poolWith(buffersInUse)
    const [stopped, next] = await Promise.all([pool.connect(), pool.connect()])
    try {
      const copy = stopped.query(
        new CopyOut("COPY (SELECT g, repeat('y', 100) FROM generate_series(1, 600000) g) TO STDOUT")
      )
      for await (const batch of copy.batches()) {
        expect(batch.length).toBeGreaterThan(0)
        await new Promise((resolve) => setTimeout(resolve, 100)) // the batch grows to a pooled buffer meanwhile
        break
      }
      const slow = next.query(
        new CopyOut('COPY (SELECT g, repeat(chr(97 + g % 26), 150) FROM generate_series(1, 60000) g) TO STDOUT')
      )
      const parts: Buffer[] = []
      for await (const batch of slow.batches()) {
        parts.push(Buffer.from(batch))
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      const lines = Buffer.concat(parts).toString().slice(0, -1).split('\n')
      expect(lines).toHaveLength(60000)
      const wrong = lines.filter(
        (line, i) => line !== `${i + 1}\t${String.fromCharCode(97 + ((i + 1) % 26)).repeat(150)}`
      )
      expect(wrong.slice(0, 3)).toEqual([])
      for (const client of [stopped, next]) expect((await client.query('SELECT 1 AS one')).rows[0]?.one).toBe(1)
    } finally {
      stopped.release()
      next.release()
    }
  })

  it('copies an empty result', async () => {
    await withClient(async (client) => {
      expect((await copyLines(client, 'COPY (SELECT 1 WHERE false) TO STDOUT')).lines).toEqual([])
    })
  })
})

/** A protocol message: its code, then its length (counting itself) and body. */
function message(code: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5)
  head.write(code, 0, 'latin1')
  head.writeUInt32BE(body.length + 4, 1)
  return Buffer.concat([head, body])
}

/** A COPY as Postgres sends it (lines, a notice, CopyDone, then what pg reads after), and reads that cut it badly. */
function copyOnTheWire() {
  const lines = [
    '1\tshort',
    `2\t${'x'.repeat(200_000)}`,
    '3\tafter the long one',
    `4\t${'y'.repeat(70_000)}`,
    '5\tlast'
  ]
  const after = Buffer.concat([message('C', Buffer.from('COPY 5\0')), message('Z', Buffer.from('I'))])
  const wire = Buffer.concat([
    message('H', Buffer.from([0, 0, 2, 0, 0, 0, 0])),
    ...lines.map((line) => message('d', Buffer.from(`${line}\n`))),
    message('N', Buffer.from('notice\0')),
    message('c', Buffer.alloc(0)),
    after
  ])
  // reads cut inside a header (1 and 3 bytes in), inside bodies, and a long message spread over several reads
  const firstLong = wire.indexOf(Buffer.from('2\tx')) - 5
  const cuts = [
    3,
    20,
    firstLong + 2,
    firstLong + 1000,
    firstLong + 65_536,
    firstLong + 131_072,
    firstLong + 196_000,
    wire.length - after.length - 3,
    wire.length - 4
  ]
  return { text: lines.map((line) => `${line}\n`).join(''), after, wire, cuts }
}

/** Reads every batch of `copy` into one buffer. */
async function allBatches(copy: CopyOut): Promise<Buffer> {
  const received: Buffer[] = []
  for await (const batch of copy.batches()) received.push(Buffer.from(batch))
  return Buffer.concat(received)
}

describe('CopyOut reading the protocol in any split', () => {
  it('gets every line and hands the bytes after CopyDone back to pg, however the reads cut the messages', async () => {
    const { text, after, wire, cuts } = copyOnTheWire()
    for (const splitAt of [cuts, Array.from({ length: Math.floor(wire.length / 9973) }, (_, i) => (i + 1) * 9973)]) {
      const stream = new PassThrough()
      const handedBack: Buffer[] = []
      stream.on('data', (chunk: Buffer) => handedBack.push(chunk))
      const copy = new CopyOut('COPY x TO STDOUT')
      copy.submit({ stream, query: () => undefined } as unknown as Parameters<CopyOut['submit']>[0])
      const reading = allBatches(copy)
      let from = 0
      for (const to of [...splitAt, wire.length]) {
        stream.write(Buffer.from(wire.subarray(from, to)))
        from = to
        await new Promise((resolve) => setImmediate(resolve))
      }
      copy.handleReadyForQuery()
      expect((await reading).toString()).toBe(text)
      expect(Buffer.concat(handedBack)).toEqual(after)
    }
  })

  it('keeps nothing of a read: a socket that reads everything into one buffer gets the same', async () => {
    const { text, after, wire, cuts } = copyOnTheWire()
    const server = net.createServer((peer) => {
      void (async () => {
        let from = 0
        for (const to of [...cuts, wire.length]) {
          peer.write(wire.subarray(from, to))
          from = to
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      })()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const socket = reusedReadSocket()
    try {
      await new Promise<void>((resolve) => socket.connect((server.address() as AddressInfo).port, '127.0.0.1', resolve))
      const handedBack: Buffer[] = []
      socket.on('data', (chunk: Buffer) => handedBack.push(chunk))
      const copy = new CopyOut('COPY x TO STDOUT')
      copy.submit({ stream: socket, query: () => undefined } as unknown as Parameters<CopyOut['submit']>[0])
      const reading = allBatches(copy)
      await vi.waitFor(() => expect(Buffer.concat(handedBack).length).toBe(after.length), { timeout: 15_000 })
      copy.handleReadyForQuery()
      expect((await reading).toString()).toBe(text)
      expect(Buffer.concat(handedBack)).toEqual(after)
    } finally {
      socket.destroy()
      server.close()
    }
  })
})
