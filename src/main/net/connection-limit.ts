import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** Open connections per server by default: room for the bench's 10,000 SSE streams and as many long-polls besides. */
export const DEFAULT_MAX_CONNECTIONS = 16_384
/** A connection past the limit has this long to send its request (to be answered 503, or health) before it is cut. */
const OVER_LIMIT_TIMEOUT_MS = 5_000

export interface ConnectionLimitOptions {
  max: number
  /** What the refusal calls the server, e.g. `the shape server`. */
  name: string
  /** Requests answered even on a connection past the limit (health checks). */
  exempt?: (req: IncomingMessage) => boolean
}

/** Connections past the limit still read for a request, to be answered; past these, new ones are closed unanswered. */
export const overLimitAnswered = (max: number): number => Math.max(256, Math.ceil(max / 8))

/**
 * Bounds the open connections of an HTTP server. Connections past `max` are still accepted, up to a few more, and
 * their requests answered `503 too_many_connections` with `connection: close` (health checks are answered as usual);
 * past those, Node closes new connections at once (`server.maxConnections`). Either way the process goes on serving
 * the connections it has. Returns the guard each request goes through first: true when it answered the request.
 */
export function limitConnections(
  server: Server,
  options: ConnectionLimitOptions
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const overLimit = new WeakSet<Socket>()
  let open = 0
  server.maxConnections = options.max + overLimitAnswered(options.max)
  server.on('connection', (socket: Socket) => {
    open += 1
    socket.once('close', () => (open -= 1))
    if (open <= options.max) return
    overLimit.add(socket)
    socket.setTimeout(OVER_LIMIT_TIMEOUT_MS, () => socket.destroy())
  })
  return (req, res) => {
    if (!overLimit.has(req.socket) || options.exempt?.(req)) return false
    res.writeHead(503, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'retry-after': '5',
      connection: 'close'
    })
    res.end(
      JSON.stringify({
        code: 'too_many_connections',
        message: `${options.name} has ${options.max} connections open, its limit (--max-connections): retry in a few seconds`
      })
    )
    return true
  }
}
