import type { IncomingMessage, ServerResponse } from 'node:http'
import { CACHE_CONTROL, type ProtocolHeaderNames, corsHeaders } from './protocol'

export type HeaderMap = Record<string, string>

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

  send(status: number, headers: HeaderMap, body: Buffer | string | null): void {
    const payload = body === null ? null : typeof body === 'string' ? Buffer.from(body) : body
    const all: HeaderMap = { ...this.baseHeaders(), ...headers }
    if (payload !== null) all['content-length'] = String(payload.length)
    this.res.writeHead(status, all)
    this.res.end(this.head || payload === null ? undefined : payload)
  }

  json(status: number, body: unknown, headers: HeaderMap = {}): void {
    const cache: HeaderMap = status >= 400 && status !== 409 ? { 'cache-control': CACHE_CONTROL.error, 'surrogate-control': 'no-store' } : {}
    this.send(status, { 'content-type': 'application/json; charset=utf-8', ...cache, ...headers }, JSON.stringify(body))
  }

  /** 401 carries no CORS headers (auth runs before CORS, as in the reference) but does say it is JSON. */
  unauthorized(): void {
    const body = JSON.stringify({ message: 'Unauthorized - Invalid API secret' })
    this.res.writeHead(401, {
      [this.names.server]: this.serverName,
      'content-type': 'application/json; charset=utf-8',
      'cache-control': CACHE_CONTROL.error,
      'content-length': String(Buffer.byteLength(body))
    })
    this.res.end(this.head ? undefined : body)
  }

  invalidRequest(errors: Record<string, unknown>): void {
    this.json(400, { message: 'Invalid request', errors })
  }

  unavailable(message: string, retryAfter: number, extra: HeaderMap = {}): void {
    this.json(503, { message }, { 'retry-after': String(retryAfter), ...extra })
  }
}
