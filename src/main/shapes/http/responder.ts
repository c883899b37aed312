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

  /** Writes an answer whose headers (content-length included) are already flat. */
  sendFlat(status: number, headers: string[], body: Buffer | null): void {
    this.res.writeHead(status, headers)
    this.res.end(this.head || body === null ? undefined : body)
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
