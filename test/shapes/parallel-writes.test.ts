import { type AddressInfo, type Socket, connect, createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ParallelSocketWrites } from '../../src/main/shapes/live/parallel-writes'

const fdOf = (socket: Socket): number => (socket as unknown as { _handle: { fd: number } })._handle.fd

describe('ParallelSocketWrites', () => {
  const accepted: Socket[] = []
  const clients: Array<{ socket: Socket; received: Buffer[] }> = []
  const server = createServer((socket) => accepted.push(socket))

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    for (let i = 0; i < 300; i++) {
      const client = { socket: connect(port, '127.0.0.1'), received: [] as Buffer[] }
      client.socket.on('data', (chunk: Buffer) => client.received.push(chunk))
      clients.push(client)
    }
    while (accepted.length < 300) await new Promise((resolve) => setTimeout(resolve, 10))
  })
  afterAll(async () => {
    for (const socket of [...accepted, ...clients.map((client) => client.socket)]) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  })

  it('writes each buffer to every socket once and in order, the second thread taking part once it runs', async () => {
    const writes = new ParallelSocketWrites()
    expect(writes.start()).toBe(true)
    const frames: Buffer[] = []
    const writeFrame = (): number => {
      const frame = Buffer.from(`frame ${frames.length} ${'.'.repeat(frames.length % 50)}\n`)
      frames.push(frame)
      expect(writes.write(accepted.map(fdOf), frame)).toEqual(accepted.map(() => frame.length))
      return writes.writtenBySecondThread
    }
    // the thread takes a moment to start; until it runs, the event loop writes every socket
    await expect.poll(writeFrame, { interval: 20, timeout: 10_000 }).toBeGreaterThan(0)
    const before = writes.writtenBySecondThread
    for (let i = 0; i < 40; i++) writeFrame()
    expect(writes.writtenBySecondThread).toBeGreaterThan(before)
    expect(writes.writtenBySecondThread - before).toBeLessThan(40 * accepted.length)
    const expected = Buffer.concat(frames).toString()
    // each client's socket is matched to its accepted one by order of arrival, which may differ: compare as a set
    await expect
      .poll(() => clients.filter((client) => Buffer.concat(client.received).toString() === expected).length)
      .toBe(300)
  })

  it('does not wait for the second thread to start: until it runs, the event loop writes every socket', async () => {
    const writes = new ParallelSocketWrites()
    const frame = Buffer.from('written before the second thread runs\n')
    expect(writes.write(accepted.map(fdOf), frame)).toEqual(accepted.map(() => frame.length))
    expect(writes.writtenBySecondThread).toBe(0)
    const expected = 'written before the second thread runs\n'
    await expect
      .poll(() => clients.filter((client) => Buffer.concat(client.received).toString().endsWith(expected)).length)
      .toBe(300)
  })

  it('reports what the kernel did not take from a socket whose reader stalls, instead of blocking', () => {
    const writes = new ParallelSocketWrites()
    for (const client of clients) client.socket.pause()
    const big = Buffer.alloc(200 * 1024, 'x')
    const fds = accepted.slice(0, 4).map(fdOf)
    let taken: number[] = []
    for (let round = 0; round < 200; round++) {
      taken = writes.write(fds, big)
      if (taken.every((bytes) => bytes < big.length)) break
    }
    expect(taken.every((bytes) => bytes < big.length)).toBe(true)
  })
})
