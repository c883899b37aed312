import { writeSync } from 'node:fs'
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import { type AddressInfo, type Socket, connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { protocolHeaderNames } from '../../src/shared/protocol'
import { Responder, writePreparedToAll } from '../../src/main/shapes/http/responder'
import { PARALLEL_FROM, descriptorOf, parallelWrites } from '../../src/main/shapes/live/parallel-writes'

const CONNECTIONS = PARALLEL_FROM + 44

/** A client connection that keeps everything it receives; `pause` stops it reading, so its kernel buffers fill. */
class Client {
  readonly socket: Socket
  private readonly chunks: Buffer[] = []

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1')
    this.socket.on('data', (chunk: Buffer) => this.chunks.push(chunk))
  }

  get received(): Buffer {
    return Buffer.concat(this.chunks)
  }
}

/** What the test server holds: each request's responder, in order of arrival, and the socket it came on. */
const waiting: Array<{ responder: Responder; socket: Socket }> = []
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const responder = new Responder(req, res, protocolHeaderNames('electric'), '/v1/shape', 'Syncscope/test')
  if (req.url === '/again') return responder.send(200, { 'content-type': 'text/plain' }, 'again')
  waiting.push({ responder, socket: req.socket })
})
const clients: Client[] = []

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  for (let i = 0; i < CONNECTIONS; i++) clients.push(new Client(port))
  parallelWrites.start()
})

afterAll(async () => {
  for (const client of clients) client.socket.destroy()
  await new Promise((resolve) => server.close(resolve))
})

/** Writes junk straight to the socket's descriptor until the kernel takes no more; returns how many bytes it took. */
function fillKernelBuffers(socket: Socket): number {
  const fd = descriptorOf(socket)!
  const junk = Buffer.alloc(64 * 1024, '#')
  let filled = 0
  for (;;) {
    try {
      const taken = writeSync(fd, junk)
      filled += taken
      if (taken < junk.length) return filled
    } catch {
      return filled
    }
  }
}

describe('one prepared answer written to many responses at once (writePreparedToAll)', () => {
  it('gives every response the whole answer; what a stalled connection did not take goes through its socket', async () => {
    for (const client of clients) client.socket.write('GET /shape HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await expect.poll(() => waiting.length).toBe(CONNECTIONS)
    const body = Buffer.from(`[${'{"value":"x"},'.repeat(200)}{"headers":{"control":"up-to-date"}}]`)
    const first = waiting[0]!.responder
    const answer = { headers: first.flatHeaders({ 'content-type': 'application/json' }, body), body }
    // two connections whose reader stalled: the kernel holds all it can take, though Node holds nothing for them
    const stalled = waiting.slice(0, 2).map(({ socket }) => socket)
    const stalledClients = clients.filter((client) =>
      stalled.some((socket) => socket.remotePort === client.socket.localPort)
    )
    for (const client of stalledClients) client.socket.pause()
    const junk = stalled.map(fillKernelBuffers)

    const wire = writePreparedToAll(
      waiting.map(({ responder }) => responder),
      answer
    )

    expect(wire).toEqual(waiting.map(() => true))
    expect(stalled.map((socket) => socket.writableLength > 0)).toEqual([true, true])
    for (const { responder } of waiting) responder.endWritten()
    for (const client of stalledClients) client.socket.resume()
    const answered = (client: Client) =>
      client.received.toString('latin1').endsWith(`\r\n\r\n${body.toString('latin1')}`)
    await expect.poll(() => clients.filter(answered).length, { timeout: 10_000 }).toBe(CONNECTIONS)
    for (const client of clients) {
      const text = client.received.toString('latin1')
      const junkBytes = stalledClients.includes(client)
        ? junk[stalled.findIndex((socket) => socket.remotePort === client.socket.localPort)]!
        : 0
      expect(text.slice(0, junkBytes)).toBe('#'.repeat(junkBytes))
      expect(text.slice(junkBytes)).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
      expect(text.length).toBe(text.indexOf('\r\n\r\n', junkBytes) + 4 + body.length)
      expect(text.slice(junkBytes)).toContain(`\r\ncontent-length: ${body.length}\r\n`)
    }

    // and each connection goes on to its next request as after any response
    const before = clients.map((client) => client.received.length)
    for (const client of clients) client.socket.write('GET /again HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await expect
      .poll(
        () =>
          clients.filter((client, i) => client.received.subarray(before[i]).toString().endsWith('\r\n\r\nagain')).length
      )
      .toBe(CONNECTIONS)
  })
})
