import { connect } from 'node:net'
import type pg from 'pg'

/** What pg keeps of a connection that a CancelRequest needs (set once the connection is up). */
interface CancelTarget {
  host?: string
  port?: number
  processID?: number | null
  secretKey?: number | null
}

const CANCEL_REQUEST_CODE = 80877102
const CANCEL_TIMEOUT_MS = 5_000

/**
 * Asks Postgres to cancel what `client`'s backend is running: a CancelRequest on a connection of its own, as psql's
 * Ctrl+C does. Works while the client's own socket is busy with a COPY and needs no pooled connection (all of them may
 * be running snapshots). Best effort: resolves once Postgres closed the cancel connection, on an error, or after 5 s.
 */
export function cancelBackend(client: pg.PoolClient): Promise<void> {
  const { host = 'localhost', port = 5432, processID, secretKey } = client as unknown as CancelTarget
  if (typeof processID !== 'number' || typeof secretKey !== 'number') return Promise.resolve()
  const packet = Buffer.alloc(16)
  packet.writeInt32BE(16, 0)
  packet.writeInt32BE(CANCEL_REQUEST_CODE, 4)
  packet.writeInt32BE(processID, 8)
  packet.writeInt32BE(secretKey, 12)
  return new Promise((resolve) => {
    const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host)
    const timer = setTimeout(() => socket.destroy(), CANCEL_TIMEOUT_MS)
    socket.once('connect', () => socket.end(packet))
    socket.once('error', () => socket.destroy())
    socket.once('close', () => {
      clearTimeout(timer)
      resolve()
    })
  })
}
