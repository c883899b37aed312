import net, { type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { lendReads, reusedReadSocket } from '../../src/main/shapes/snapshot/reused-read-socket'

const cleanups: Array<() => void> = []
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()))

/** A reusedReadSocket connected to a server that sends `pieces`, 5 ms apart (one read each); the reads it emitted. */
async function readPieces(pieces: string[], lend: boolean): Promise<Buffer[]> {
  const server = net.createServer((peer) => {
    void (async () => {
      for (const piece of pieces) {
        peer.write(piece)
        await new Promise((resolve) => setTimeout(resolve, 5))
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
  const reads: Buffer[] = []
  socket.on('data', (read: Buffer) => reads.push(read))
  await new Promise<void>((resolve) => socket.connect((server.address() as AddressInfo).port, '127.0.0.1', resolve))
  await vi.waitFor(() => expect(Buffer.concat(reads).toString()).toHaveLength(pieces.join('').length))
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
