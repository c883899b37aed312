import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { ChunkSource, Shape } from '../storage/shape'
import type { PreparedAnswer } from '../live/prepared-answers'
import { type HeaderMap, answerHeaders, cacheControl } from './answer'
import { releaseSource, sendSource, sourceLength } from './chunk-body'
import type { ProtocolHeaderNames } from '../../../shared/protocol'
import { corsHeaders, mustRefetchBody } from './protocol'
import { PARALLEL_FROM, descriptorOf, writeToSockets } from '../live/parallel-writes'

/** Writes responses of the shape API: CORS and server headers on everything but 401, JSON bodies. */
export class Responder {
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly names: ProtocolHeaderNames,
    readonly path: string,
    private readonly serverName: string
  ) {}

  get head(): boolean {
    return this.req.method === 'HEAD'
  }

  baseHeaders(): HeaderMap {
    return { [this.names.server]: this.serverName, ...corsHeaders(this.req, this.names, this.path) }
  }

  /**
   * Every header of an answer (base, CORS, `headers`, and content-length when there is a body) as a flat
   * [name, value, …] list: Node's cheapest form to write, which counts when a change wakes a thousand long-polls.
   */
  flatHeaders(headers: HeaderMap, body: Buffer | null = null): string[] {
    const flat: string[] = []
    for (const [name, value] of Object.entries({ ...this.baseHeaders(), ...headers })) flat.push(name, value)
    if (body !== null) flat.push('content-length', String(body.length))
    return flat
  }

  send(status: number, headers: HeaderMap, body: Buffer | string | null): void {
    const payload = body === null ? null : typeof body === 'string' ? Buffer.from(body) : body
    this.sendFlat(status, this.flatHeaders(headers, payload), payload)
  }

  /** Writes an answer whose body is a chunk (shared bytes or a file range) followed by `suffix`. */
  sendChunk(status: number, headers: HeaderMap, source: ChunkSource, suffix: Buffer | null): void {
    const flat = this.flatHeaders(headers)
    flat.push('content-length', String(sourceLength(source) + (suffix?.length ?? 0)))
    this.res.writeHead(status, flat)
    if (!this.head) return sendSource(this.res, source, suffix)
    releaseSource(source)
    this.res.end()
  }

  /** Writes an answer whose headers (content-length included) are already flat. */
  sendFlat(status: number, headers: string[], body: Buffer | null): void {
    this.res.writeHead(status, headers)
    this.res.end(this.head || body === null ? undefined : body)
  }

  /**
   * Writes a shared answer. Where the connection allows it, the answer goes out as the bytes of a whole response,
   * rendered once per second for every request that shares it, in one socket write: when one change wakes a thousand
   * long-polls, Node's per-response header and stream machinery (~70 µs each on a small machine) is most of the cost.
   */
  sendPrepared(answer: PreparedAnswer): void {
    if (this.writePrepared(answer)) this.endWritten()
  }

  /**
   * The first half of sendPrepared: returns true when the answer went out as wire bytes, whose response endWritten()
   * then ends (a fan-out writes every answer first, then ends them all).
   */
  writePrepared(answer: PreparedAnswer): boolean {
    const socket = this.res.socket
    if (!socket || !this.canWriteWire(socket)) {
      this.sendFlat(200, answer.headers, answer.body)
      return false
    }
    socket.write(wireBytes(answer, keepAliveLine(this.res)))
    return true
  }

  /** Where writePrepared would write wire bytes and the descriptor is known: the socket, its descriptor, its Keep-Alive line. */
  directTarget(): { socket: Socket; fd: number; keepAlive: string } | null {
    const socket = this.res.socket
    if (!socket || socket.destroyed || !this.canWriteWire(socket)) return null
    const fd = descriptorOf(socket)
    return fd === null ? null : { socket, fd, keepAlive: keepAliveLine(this.res) }
  }

  endWritten(): void {
    endWrittenResponse(this.res)
  }

  /**
   * Only a keep-alive HTTP/1.1 GET whose response owns an idle socket, and only on a Node whose response keeps the
   * state endWrittenResponse relies on; anything else takes the ordinary path.
   */
  private canWriteWire(socket: Socket): boolean {
    const { req, res } = this
    const state = res as unknown as Partial<NodeResponseState>
    return (
      req.httpVersion === '1.1' &&
      !this.head &&
      res.shouldKeepAlive &&
      !res.headersSent &&
      socket.writableLength === 0 &&
      typeof state._headerSent === 'boolean' &&
      res.sendDate
    )
  }

  json(status: number, body: unknown, headers: HeaderMap = {}): void {
    this.send(status, answerHeaders({ kind: 'json', status, body, headers }), JSON.stringify(body))
  }

  /** 401 carries no CORS headers (auth runs before CORS, as in the reference) but does say it is JSON. */
  unauthorized(): void {
    this.withoutCors(401, { message: 'Unauthorized - Invalid API secret' })
  }

  /** A refused Host or Origin: no CORS headers, so the refused page cannot even read why. */
  forbidden(body: { code: string; message: string }): void {
    this.withoutCors(403, body)
  }

  private withoutCors(status: number, message: unknown): void {
    const body = JSON.stringify(message)
    this.res.writeHead(status, {
      [this.names.server]: this.serverName,
      'content-type': 'application/json; charset=utf-8',
      'cache-control': cacheControl({ kind: 'json', status, body: message })['cache-control'] as string,
      'content-length': String(Buffer.byteLength(body))
    })
    this.res.end(this.head ? undefined : body)
  }

  /** 409 must-refetch, pointing at the shape that now serves the definition (when there is one). */
  mustRefetch(current: Shape | null): void {
    this.send(409, answerHeaders({ kind: 'must-refetch', current }, this), mustRefetchBody)
  }

  invalidRequest(errors: Record<string, unknown>): void {
    this.json(400, { message: 'Invalid request', errors })
  }

  unavailable(message: string, retryAfter: number, extra: HeaderMap = {}): void {
    this.json(503, { message }, { 'retry-after': String(retryAfter), ...extra })
  }
}

/**
 * writePrepared for many responses at once, as when one change wakes a thousand long-polls: from PARALLEL_FROM on, the
 * wire bytes go straight to the sockets' descriptors, written by two threads (most of a small write's cost is the
 * kernel's); what a socket did not take goes through it as usual. Returns, per responder, what writePrepared would.
 */
export function writePreparedToAll(responders: readonly Responder[], answer: PreparedAnswer): boolean[] {
  if (responders.length < PARALLEL_FROM) return responders.map((responder) => responder.writePrepared(answer))
  const direct = new Map<string, { sockets: Socket[]; fds: number[] }>()
  const wire = responders.map((responder) => {
    const target = responder.directTarget()
    if (!target) return responder.writePrepared(answer)
    const same = direct.get(target.keepAlive) ?? { sockets: [], fds: [] }
    direct.set(target.keepAlive, same)
    same.sockets.push(target.socket)
    same.fds.push(target.fd)
    return true
  })
  for (const [keepAlive, { sockets, fds }] of direct) writeToSockets(sockets, fds, wireBytes(answer, keepAlive))
  return wire
}

/** The fields of Node's ServerResponse that say its head has gone out (stable since Node's first releases). */
interface NodeResponseState {
  _header: string | null
  _headerSent: boolean
}

/** What Node's keep-alive head carries for the server's idle timeout (and request limit), as Node writes it. */
interface NodeKeepAliveState {
  _keepAliveTimeout?: number
  _defaultKeepAlive?: boolean
  _maxRequestsPerSocket?: number
}

/** The `Keep-Alive` line Node adds to a keep-alive response: without it a client may reuse a socket the server closed. */
function keepAliveLine(res: ServerResponse): string {
  const {
    _keepAliveTimeout: timeout,
    _defaultKeepAlive: keepAlive,
    _maxRequestsPerSocket: max
  } = res as unknown as NodeKeepAliveState
  if (!timeout || !keepAlive) return ''
  return `Keep-Alive: timeout=${Math.floor(timeout / 1000)}${max && max > 0 ? `, max=${max}` : ''}\r\n`
}

/**
 * Ends a response whose bytes were written to its socket directly: with its head marked as sent, `end()` writes
 * nothing and only finishes the response, so Node's keep-alive handling (the next request on the connection, timeouts)
 * goes on as after any response.
 */
function endWrittenResponse(res: ServerResponse): void {
  const state = res as unknown as NodeResponseState
  state._header = 'HTTP/1.1 200 OK\r\n'
  state._headerSent = true
  res.end()
}

let dateLine = { second: -1, text: '' }

/** Date as Node writes it, computed once a second. */
function httpDate(): string {
  const second = Math.floor(Date.now() / 1000)
  if (dateLine.second !== second) dateLine = { second, text: new Date(second * 1000).toUTCString() }
  return dateLine.text
}

/** The answer as a complete response (with the headers Node adds: Date, Connection, Keep-Alive), rendered once per second. */
function wireBytes(answer: PreparedAnswer, keepAlive: string): Buffer {
  const date = httpDate()
  if (answer.wire?.date === date && answer.wire.keepAlive === keepAlive) return answer.wire.bytes
  let head = 'HTTP/1.1 200 OK\r\n'
  for (let index = 0; index < answer.headers.length; index += 2)
    head += `${answer.headers[index]}: ${answer.headers[index + 1]}\r\n`
  head += `Date: ${date}\r\nConnection: keep-alive\r\n${keepAlive}\r\n`
  const bytes = Buffer.concat([Buffer.from(head, 'latin1'), answer.body])
  answer.wire = { date, keepAlive, bytes }
  return bytes
}
