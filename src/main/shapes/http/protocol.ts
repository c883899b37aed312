import type { IncomingMessage } from 'node:http'
import { sameSecret } from '../../net/guard'

import { CONTROL, exposedProtocolHeaders, type ProtocolHeaderNames } from '../../../shared/protocol'

/** `--secret`: `secret=` (or the deprecated `api_secret=`; `secret` wins) equals it, compared in constant time. */
export function secretMatches(query: URLSearchParams, secret: string): boolean {
  return sameSecret(query.get('secret') ?? query.get('api_secret'), secret)
}

/** `--sse-lifetime`: how long an SSE stream stays open (the reference: 60 s, with max-age 59). */
export const DEFAULT_SSE_LIFETIME_MS = 58_000

/** An SSE stream closes before a cache could hand it out stale: its max-age outlasts its lifetime by a second. */
export const sseCacheControl = (lifetimeMs: number): string => `public, max-age=${Math.ceil(lifetimeMs / 1000) + 1}`

/** cache-control per response class, as the reference sends them (catch-up: see catchUpCacheControl). */
export const CACHE_CONTROL = {
  initial: 'public, max-age=604800, s-maxage=3600, stale-while-revalidate=2629746',
  live: 'public, max-age=5, stale-while-revalidate=5',
  conflict: (withHandle: boolean) => `public, max-age=${withHandle ? 60 : 1}, must-revalidate`,
  error: 'no-store',
  noCache: 'no-cache'
} as const

/** `--cache-max-age` / `--cache-stale-age` (the reference's ELECTRIC_CACHE_MAX_AGE / ELECTRIC_CACHE_STALE_AGE), in seconds. */
export interface CacheSettings {
  maxAge: number
  staleAge: number
}

export const DEFAULT_CACHE: CacheSettings = { maxAge: 60, staleAge: 300 }

/** cache-control of catch-up answers, `offset=now` and their 304s: what a CDN in front may keep, and serve stale. */
export const catchUpCacheControl = ({ maxAge, staleAge }: CacheSettings): string =>
  `public, max-age=${maxAge}, stale-while-revalidate=${staleAge}`

/** Request headers a browser may send to the shape API directly (preflight answer). */
const ALLOWED_REQUEST_HEADERS = new Set(['if-none-match', 'traceparent', 'content-type'])

/** CORS for every response but 401: the Origin echoed (with Vary, so shared caches keep origins apart). */
export function corsHeaders(req: IncomingMessage, names: ProtocolHeaderNames, path: string): Record<string, string> {
  const origin = req.headers.origin
  return {
    'access-control-allow-origin': typeof origin === 'string' && origin !== '' ? origin : '*',
    'access-control-expose-headers': exposedProtocolHeaders(names).join(','),
    'access-control-allow-methods': path === '/v1/shape' ? 'GET, POST, HEAD, DELETE, OPTIONS' : 'GET, HEAD',
    vary: 'Origin'
  }
}

export function preflightHeaders(req: IncomingMessage): Record<string, string> {
  const requested = String(req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((header) => header.trim().toLowerCase())
    .filter((header) => ALLOWED_REQUEST_HEADERS.has(header))
  return {
    'access-control-max-age': '86400',
    ...(requested.length > 0 ? { 'access-control-allow-headers': requested.join(', ') } : {}),
    connection: 'keep-alive'
  }
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

export const mustRefetchBody = JSON.stringify([{ headers: { control: CONTROL.mustRefetch } }])

/** A JSON array body from newline-separated messages plus optional trailing messages, built with one copy. */
export function arrayBody(lines: Buffer | null, ...trailing: string[]): Buffer {
  const tail = trailing.map((message) => Buffer.from(message))
  const linesLength = lines?.length ?? 0
  const parts = (linesLength > 0 ? 1 : 0) + tail.length
  const size = 2 + linesLength + tail.reduce((total, message) => total + message.length, 0) + Math.max(0, parts - 1)
  const body = Buffer.allocUnsafe(size)
  body[0] = 91
  let at = 1
  if (lines && linesLength > 0) {
    at += lines.copy(body, at)
    const region = body.subarray(1, at)
    for (let newline = region.indexOf(10); newline !== -1; newline = region.indexOf(10, newline + 1))
      region[newline] = 44
  }
  for (const message of tail) {
    if (at > 1) body[at++] = 44
    at += message.copy(body, at)
  }
  body[at] = 93
  return body
}
