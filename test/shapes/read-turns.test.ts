import { spawn } from 'node:child_process'
import { createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ReadTurns } from '../../src/main/shapes/replication/read-turns'

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/** ReadTurns with a 5 ms slice over a stream that records its calls, on a clock moved by `advance(ms)`. */
function turnsOnFakeClock() {
  let now = 1000
  vi.spyOn(performance, 'now').mockImplementation(() => now)
  const calls: string[] = []
  const turns = new ReadTurns({ pause: () => calls.push('pause'), resume: () => calls.push('resume') }, 5)
  return { turns, calls, advance: (ms: number) => (now += ms) }
}

describe('reading the walsender a turn at a time', () => {
  afterEach(() => vi.restoreAllMocks())

  it('stops reading once a turn has spent its slice, and reads again in the next turn', async () => {
    const { turns, calls, advance } = turnsOnFakeClock()
    turns.messageHandled()
    advance(4)
    turns.messageHandled()
    expect(calls).toEqual([])
    advance(1)
    turns.messageHandled()
    turns.messageHandled()
    expect(calls).toEqual(['pause'])
    await nextTurn()
    expect(calls).toEqual(['pause', 'resume'])
    // a new turn has a new slice
    turns.messageHandled()
    advance(4)
    turns.messageHandled()
    expect(calls).toEqual(['pause', 'resume'])
  })

  it('keeps a hold of the consumer through the end of a turn, and a yield through a release', async () => {
    const { turns, calls, advance } = turnsOnFakeClock()
    turns.hold()
    turns.messageHandled()
    advance(10)
    turns.messageHandled()
    await nextTurn()
    expect(calls).toEqual(['pause', 'pause'])
    turns.release()
    expect(calls).toEqual(['pause', 'pause', 'resume'])
    turns.messageHandled()
    advance(10)
    turns.messageHandled()
    turns.hold()
    turns.release()
    expect(calls.slice(3)).toEqual(['pause', 'pause'])
    await nextTurn()
    expect(calls.slice(3)).toEqual(['pause', 'pause', 'resume'])
  })

  describe('on a real socket', () => {
    let server: Server | undefined
    afterEach(() => server?.close())

    it('leaves the event loop free between slices while megabytes wait in the socket', async () => {
      const bytes = 16 * 1024 * 1024
      const accepted = new Promise<Socket>((resolve) => (server = createServer(resolve)))
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
      // the sender is another process, so the data waits in the socket as a walsender's does
      const sender = `require('net').connect(${(server!.address() as { port: number }).port}, '127.0.0.1', function () { this.end(Buffer.alloc(${bytes}, 7)) })`
      spawn(process.execPath, ['-e', sender], { stdio: 'ignore' })
      const socket = await accepted
      socket.pause()
      await new Promise((resolve) => setTimeout(resolve, 500)) // the kernel's buffers fill up meanwhile
      const turns = new ReadTurns(socket, 5)
      let readsThisTurn = 0
      let mostReadsInATurn = 0
      let received = 0
      let ticking = true
      const tick = () => {
        readsThisTurn = 0
        if (ticking) setImmediate(tick)
      }
      setImmediate(tick)
      socket.on('data', (chunk: Buffer) => {
        received += chunk.length
        readsThisTurn += 1
        mostReadsInATurn = Math.max(mostReadsInATurn, readsThisTurn)
        const until = performance.now() + 1
        while (performance.now() < until); // the decoding of one read's messages
        turns.messageHandled()
      })
      socket.resume()
      await new Promise((resolve) => socket.on('end', resolve))
      ticking = false
      expect(received).toBe(bytes)
      // 1 ms per read against a 5 ms slice: five reads, plus the one Node buffers as the socket is paused
      expect(mostReadsInATurn).toBeLessThanOrEqual(7)
    })
  })
})
