import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { get, shapeUrl, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, untilHeld, type TestShapeServer } from '../support/shape-server'
import { PARALLEL_FROM } from '../../src/main/shapes/http/parallel-writes'

const LONG_POLL_MS = 2000

interface RawResponse {
  status: number
  head: string
  headers: Map<string, string>
  body: string
}

/** One HTTP/1.x connection driven by hand: requests written as given, responses read by content-length. */
class RawConnection {
  private readonly socket: Socket
  private received = Buffer.alloc(0)
  private waiting: (() => void) | null = null
  closed = false

  constructor(url: string) {
    const { hostname, port } = new URL(url)
    this.socket = connect(Number(port), hostname)
    this.socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk])
      this.waiting?.()
    })
    this.socket.on('close', () => {
      this.closed = true
      this.waiting?.()
    })
  }

  send(path: string, headers: Record<string, string> = {}, version = '1.1'): void {
    const lines = [
      `GET ${path} HTTP/${version}`,
      'Host: 127.0.0.1',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)
    ]
    this.socket.write(`${lines.join('\r\n')}\r\n\r\n`)
  }

  async response(): Promise<RawResponse> {
    for (;;) {
      const parsed = this.take()
      if (parsed) return parsed
      if (this.closed) throw new Error('connection closed before a whole response')
      await new Promise<void>((resolve) => (this.waiting = resolve))
    }
  }

  private take(): RawResponse | null {
    const headEnd = this.received.indexOf('\r\n\r\n')
    if (headEnd === -1) return null
    const head = this.received.toString('latin1', 0, headEnd)
    const headers = new Map(
      head
        .split('\r\n')
        .slice(1)
        .map(
          (line) =>
            [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()] as [
              string,
              string
            ]
        )
    )
    const length = Number(headers.get('content-length') ?? 0)
    if (this.received.length < headEnd + 4 + length) return null
    const body = this.received.toString('utf8', headEnd + 4, headEnd + 4 + length)
    this.received = this.received.subarray(headEnd + 4 + length)
    return { status: Number(head.slice(9, 12)), head, headers, body }
  }

  close(): void {
    this.socket.destroy()
  }
}

let server: TestShapeServer
let base: { handle: string; offset: string }

beforeAll(async () => {
  server = await startTestShapeServer({ longPollTimeout: LONG_POLL_MS })
  await server.pool.query('CREATE TABLE fan (id int PRIMARY KEY, val int)')
  await server.pool.query('INSERT INTO fan VALUES (1, 0)')
  const synced = await syncToEnd(server.url, { table: 'fan' })
  base = { handle: synced.handle, offset: synced.offset }
})

afterAll(async () => {
  await server.close()
})

const livePath = (params: Record<string, string> = {}): string => {
  const url = new URL(
    shapeUrl(server.url, { table: 'fan', handle: base.handle, offset: base.offset, live: 'true', ...params })
  )
  return `${url.pathname}${url.search}`
}

/** Commits a change and moves `base` past it. */
async function change(): Promise<void> {
  await server.pool.query('UPDATE fan SET val = val + 1')
}

async function advance(): Promise<void> {
  const caughtUp = await get(server.url, { table: 'fan', handle: base.handle, offset: base.offset })
  base.offset = caughtUp.header('@offset') ?? base.offset
}

/** Waits until the server holds `count` live long-polls (parsed and waiting for the next change). */
const held = (count: number): Promise<void> => untilHeld(server, base.handle, count)

describe('one change, many waiting long-polls', () => {
  // from PARALLEL_FROM on, the answer goes straight to the sockets' descriptors, written by two threads
  it.each([40, PARALLEL_FROM + 10])(
    'answers every one of %i identical long-polls with the same change, and keeps each connection usable',
    async (count) => {
      const connections = Array.from({ length: count }, () => new RawConnection(server.url))
      for (const connection of connections) connection.send(livePath())
      await held(count)
      await change()
      const answers = await Promise.all(connections.map((connection) => connection.response()))
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        expect(answer.body).toBe(answers[0]?.body)
        expect(JSON.parse(answer.body)).toMatchObject([
          { headers: { operation: 'update' }, value: { id: '1' } },
          { headers: { control: 'up-to-date' } }
        ])
        expect(answer.headers.get('service-offset')).toBe(answers[0]?.headers.get('service-offset'))
        expect(answer.headers.get('date')).toMatch(/GMT$/)
      }
      // the next request on each kept-alive connection is served as usual
      const next = answers[0]?.headers.get('service-offset') ?? ''
      for (const connection of connections) connection.send(livePath({ offset: next }))
      await held(count)
      await change()
      const again = await Promise.all(connections.map((connection) => connection.response()))
      expect(again.map((answer) => answer.status)).toEqual(connections.map(() => 200))
      expect(new Set(again.map((answer) => answer.body)).size).toBe(1)
      connections.forEach((connection) => connection.close())
      await advance()
    }
  )

  it('writes the same headers as an answer through the ordinary path (Connection: close, HTTP/1.0)', async () => {
    const shared = new RawConnection(server.url)
    const closing = new RawConnection(server.url)
    const old = new RawConnection(server.url)
    const origin = { Origin: 'http://localhost:5173' }
    shared.send(livePath(), origin)
    closing.send(livePath(), { ...origin, Connection: 'close' })
    old.send(livePath(), origin, '1.0')
    await held(3)
    await change()
    const [wire, ordinary, http10] = await Promise.all([shared.response(), closing.response(), old.response()])
    const comparable = (answer: RawResponse | undefined) =>
      [...(answer?.headers ?? [])].filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name)).sort()
    expect(comparable(wire)).toEqual(comparable(ordinary))
    expect(comparable(wire)).toEqual(comparable(http10))
    expect(wire.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    expect(ordinary.headers.get('connection')).toBe('close')
    await vi.waitFor(() => expect(closing.closed, 'the Connection: close one is closed').toBe(true), {
      timeout: 10_000
    })
    expect(wire.body).toBe(ordinary.body)
    ;[shared, closing, old].forEach((connection) => connection.close())
    await advance()
  })

  it('lets members leave: a client that goes away, one with another cursor, a conditional one, a timed-out one', async () => {
    const leaving = new RawConnection(server.url)
    const staying = new RawConnection(server.url)
    const otherCursor = new RawConnection(server.url)
    const conditional = new RawConnection(server.url)
    leaving.send(livePath())
    staying.send(livePath())
    otherCursor.send(livePath({ cursor: '12345' }))
    conditional.send(livePath(), { 'If-None-Match': '"nothing-matches"' })
    await held(4)
    leaving.close()
    await held(3)
    await change()
    const [stayed, cursor, conditioned] = await Promise.all([
      staying.response(),
      otherCursor.response(),
      conditional.response()
    ])
    expect([stayed.status, cursor.status, conditioned.status]).toEqual([200, 200, 200])
    expect(JSON.parse(cursor.body)).toEqual(JSON.parse(stayed.body))
    expect(Number(cursor.headers.get('service-cursor'))).toBeGreaterThan(12345)
    expect(JSON.parse(conditioned.body)).toEqual(JSON.parse(stayed.body))
    ;[staying, otherCursor, conditional].forEach((connection) => connection.close())
    await advance()

    const idle = new RawConnection(server.url)
    const started = Date.now()
    idle.send(livePath())
    const timedOut = await idle.response()
    expect(Date.now() - started).toBeGreaterThanOrEqual(LONG_POLL_MS - 50)
    expect(timedOut.status).toBe(200)
    expect(JSON.parse(timedOut.body)).toEqual([
      { headers: { control: 'up-to-date', global_last_seen_lsn: expect.any(String) } }
    ])
    idle.close()
  })

  it('answers waiting long-polls with must-refetch when the shape is dropped', async () => {
    const waiting = Array.from({ length: 5 }, () => new RawConnection(server.url))
    for (const connection of waiting) connection.send(livePath())
    await held(5)
    await fetch(shapeUrl(server.url, { table: 'fan', handle: base.handle }), { method: 'DELETE' })
    const answers = await Promise.all(waiting.map((connection) => connection.response()))
    expect(answers.map((answer) => answer.status)).toEqual([409, 409, 409, 409, 409])
    waiting.forEach((connection) => connection.close())
  })
})
