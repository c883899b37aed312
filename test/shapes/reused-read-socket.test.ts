import net, { type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { lendReads, reusedReadSocket } from '../../src/main/shapes/snapshot/reused-read-socket'

const cleanups: Array<() => void> = []
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()))

/**
 * A reusedReadSocket connected to a server that sends `pieces`, each only once the one before was read (so each is one
 * read of its own, however loaded the machine); the reads it emitted.
 */
async function readPieces(pieces: string[], lend: boolean): Promise<Buffer[]> {
  const reads: Buffer[] = []
  let received = 0
  const server = net.createServer((peer) => {
    void (async () => {
      let sent = 0
      for (const piece of pieces) {
        peer.write(piece)
        sent += piece.length
        await vi.waitFor(() => expect(received).toBe(sent), { interval: 1 })
      }
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const socket = reusedReadSocket()
  cleanups.push(
    () => socket.destroy(),
    () => server.close()
  )
  lendReads(socket, lend)
  socket.on('data', (read: Buffer) => {
    reads.push(read)
    received += read.length
  })
  await new Promise<void>((resolve) => socket.connect((server.address() as AddressInfo).port, '127.0.0.1', resolve))
  await vi.waitFor(() => expect(received).toBe(pieces.join('').length), { timeout: 15_000 })
  return reads
}

describe('reusedReadSocket', () => {
  it('emits each read in a copy of its own, which later reads leave alone', async () => {
    const reads = await readPieces(['first', 'second', 'third'], false)
    // views of the reused buffer would all read as its last contents
    expect(reads.map(String)).toEqual(['first', 'second', 'third'])
  })

  it('emits the one buffer it reads into while lent: no allocation per read', async () => {
    const reads = await readPieces(['first', 'second', 'third'], true)
    expect(reads).toHaveLength(3)
    expect(new Set(reads.map((read) => read.buffer)).size).toBe(1)
    expect(String(reads[2])).toBe('third')
  })
})
