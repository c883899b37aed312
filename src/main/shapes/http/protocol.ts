import type { IncomingMessage } from 'node:http'

export type HeaderBrand = 'service' | 'electric'

/** Header names of the protocol under a brand: `service-offset` or `electric-offset`, … */
export function protocolHeaderNames(brand: HeaderBrand) {
  return {
    offset: `${brand}-offset`,
    handle: `${brand}-handle`,
    schema: `${brand}-schema`,
    cursor: `${brand}-cursor`,
    upToDate: `${brand}-up-to-date`,
    hasData: `${brand}-has-data`,
    snapshot: `${brand}-snapshot`,
    knownError: `${brand}-internal-known-error`,
    server: `${brand}-server`
  } as const
}
export type ProtocolHeaderNames = ReturnType<typeof protocolHeaderNames>

/** Streams close before a cache could hand a stale one out: lifetime below the max-age. */
export const SSE_MAX_AGE_SECONDS = 59
export const SSE_LIFETIME_MS = 58_000

/** cache-control per response class, as the reference sends them. */
export const CACHE_CONTROL = {
  initial: 'public, max-age=604800, s-maxage=3600, stale-while-revalidate=2629746',
  sse: `public, max-age=${SSE_MAX_AGE_SECONDS}`,
  live: 'public, max-age=5, stale-while-revalidate=5',
  catchUp: 'public, max-age=60, stale-while-revalidate=300',
  conflict: (withHandle: boolean) => `public, max-age=${withHandle ? 60 : 1}, must-revalidate`,
  error: 'no-store',
  noCache: 'no-cache'
} as const

/** Request headers a browser may send to the shape API directly (preflight answer). */
const ALLOWED_REQUEST_HEADERS = new Set(['if-none-match', 'traceparent', 'content-type'])

export function exposedHeaders(names: ProtocolHeaderNames): string {
  return [names.cursor, names.handle, names.hasData, names.offset, names.schema, names.upToDate, names.knownError, 'retry-after'].join(',')
}

/** CORS for every response but 401: the Origin echoed (with Vary, so shared caches keep origins apart). */
export function corsHeaders(req: IncomingMessage, names: ProtocolHeaderNames, path: string): Record<string, string> {
  const origin = req.headers.origin
  return {
    'access-control-allow-origin': typeof origin === 'string' && origin !== '' ? origin : '*',
    'access-control-expose-headers': exposedHeaders(names),
    'access-control-allow-methods': path === '/v1/shape' ? 'GET, POST, HEAD, DELETE, OPTIONS' : 'GET, HEAD',
    vary: 'Origin'
  }
}

export function preflightHeaders(req: IncomingMessage): Record<string, string> {
  const requested = String(req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((header) => header.trim().toLowerCase())
    .filter((header) => ALLOWED_REQUEST_HEADERS.has(header))
  return { 'access-control-max-age': '86400', ...(requested.length > 0 ? { 'access-control-allow-headers': requested.join(', ') } : {}), connection: 'keep-alive' }
}

const CURSOR_EPOCH_SECONDS = Date.UTC(2024, 9, 9) / 1000

/**
 * The live cursor: the current long-poll window since 2024-10-09, so every client in a window sends the same URL
 * (a CDN collapses them), bumped past the client's own cursor so a cached empty answer is never served back to it.
 */
export function nextCursor(longPollTimeoutMs: number, requested: string | null, now = Date.now()): number {
  const interval = Math.floor(longPollTimeoutMs / 1000)
  if (interval < 1) return 0
  const next = Math.ceil((now / 1000 - CURSOR_EPOCH_SECONDS) / interval) * interval
  const previous = Number.parseInt(requested ?? '', 10)
  if (!Number.isFinite(previous) || next > previous) return next
  return previous + 1 + Math.floor(Math.random() * 3600)
}

/** `If-None-Match` matches when any listed tag, unquoted, equals the etag. */
export function etagMatches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false
  const bare = etag.replaceAll('"', '')
  return String(header)
    .split(',')
    .some((tag) => tag.trim().replaceAll('"', '') === bare)
}

/** Monotonic suffix of "no changes" etags, so such responses never revalidate. */
export const monotonicTag = (): string => process.hrtime.bigint().toString()

export const upToDateMessage = (lsn: bigint): string => JSON.stringify({ headers: { control: 'up-to-date', global_last_seen_lsn: lsn.toString() } })

export const mustRefetchBody = JSON.stringify([{ headers: { control: 'must-refetch' } }])

/** A JSON array body from newline-separated messages plus optional trailing messages. */
export function arrayBody(lines: Buffer | null, ...trailing: string[]): Buffer {
  const parts: Buffer[] = [Buffer.from('[')]
  if (lines && lines.length > 0) {
    const joined = Buffer.from(lines)
    for (let at = joined.indexOf(10); at !== -1; at = joined.indexOf(10, at + 1)) joined[at] = 44
    parts.push(joined)
  }
  for (const message of trailing) parts.push(Buffer.from(parts.length > 1 ? `,${message}` : message))
  parts.push(Buffer.from(']'))
  return Buffer.concat(parts)
}
