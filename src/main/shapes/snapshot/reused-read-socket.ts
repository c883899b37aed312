import net from 'node:net'
import type { Duplex } from 'node:stream'

/** The most one socket read takes (Node's own read size). */
const READ_BYTES = 64 * 1024

const lent = new WeakSet<Duplex>()

/**
 * A socket for the shape service's pg connections that reads into one buffer of its own, reused for every read. Node
 * otherwise allocates a fresh buffer per read: ~75 MB for the COPY of a 1,000,000-row snapshot. V8 counts that memory
 * against its old-generation limit until a full mark-compact frees it, and bench target 1 measured 4–8 of them per
 * sync (~250 ms of CPU). Reads are emitted as 'data' in a copy, which pg's parser may keep; while lent (lendReads),
 * the reused buffer itself is emitted, and the listener must be done with it when it returns.
 */
export function reusedReadSocket(): net.Socket {
  const buffer = Buffer.allocUnsafe(READ_BYTES)
  const socket = new net.Socket({
    onread: {
      buffer,
      callback: (bytesRead: number) => {
        const read = buffer.subarray(0, bytesRead)
        socket.emit('data', lent.has(socket) ? read : Buffer.from(read))
        return true
      }
    }
    // Node takes `onread` at construction too, which its types only declare for connect()
  } as net.SocketConstructorOpts)
  return socket
}

/** While `lend` holds, a reusedReadSocket emits the buffer it reuses (no copy); any other stream is left as it is. */
export function lendReads(stream: Duplex, lend: boolean): void {
  if (lend) lent.add(stream)
  else lent.delete(stream)
}

/**
 * pg's `stream` option (pg passes the connection's config, which its types leave out): the reused-read socket, except
 * for TLS, which pg layers on a plain socket of its own.
 */
export const shapeConnectionStream = (config?: { ssl?: unknown }): net.Socket =>
  config?.ssl ? new net.Socket() : reusedReadSocket()
