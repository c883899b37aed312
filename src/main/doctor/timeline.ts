import type { CacheStatus, TimelineEntry } from '../../shared/contract/doctor'
import { isCredentialParam } from '../../shared/shape-client/credentials'
import { MessageSchema, type Message } from '../../shared/shape-client/messages'
import {
  CONTROL,
  detectBrand,
  POSITION_PARAMS,
  headerName,
  type HeaderBrand,
  type ProtocolHeader
} from '../../shared/protocol'
import { maskUrl } from '../../shared/shape-client/recorder'
import { SseParser } from '../../shared/shape-client/sse'
import type { RawExchange } from './input'

/** A shape request of the recording with what the doctor read from it. */
export interface ShapeExchange {
  raw: RawExchange
  entry: TimelineEntry
  brand: HeaderBrand | null
  /** The change messages of the body, in order. */
  changes: Array<{ key: string; operation: string }>
  /** The body's messages could not all be read (cut, or not the protocol's JSON). */
  unreadable: boolean
}

/** Query parameters that move along a shape's log rather than name the shape. */
const POSITION_PARAM_SET: ReadonlySet<string> = new Set(POSITION_PARAMS)

const header = (headers: RawExchange['responseHeaders'], name: string): string | null =>
  headers.find(([key]) => key.toLowerCase() === name)?.[1] ?? null

function brandOf(exchange: RawExchange): HeaderBrand | null {
  return detectBrand((name) => header(exchange.responseHeaders, name) !== null)
}

/** A request of the Shape API: its answer carries protocol headers, or it asks for a log position. */
export function isShapeRequest(exchange: RawExchange): boolean {
  if (exchange.method === 'OPTIONS') return false
  if (brandOf(exchange) !== null) return true
  const url = new URL(exchange.url)
  return (
    url.searchParams.has('offset') &&
    (url.searchParams.has('table') || url.searchParams.has('handle') || /\/v1\/shape\/?$/.test(url.pathname))
  )
}

const CACHE_HEADERS = ['cf-cache-status', 'x-cache-status', 'x-cache', 'x-proxy-cache']

/** Who answered: a shared cache (by its status header or `age`), the browser's own cache, or the origin. */
export function cacheStatusOf(exchange: RawExchange): TimelineEntry['cache'] {
  if (exchange.browserCache)
    return { status: 'browser', evidence: `served from the browser's ${exchange.browserCache} cache` }
  for (const name of CACHE_HEADERS) {
    const value = header(exchange.responseHeaders, name)
    if (!value) continue
    const word = value.toUpperCase()
    const status: CacheStatus = /HIT/.test(word)
      ? 'hit'
      : /STALE|UPDATING/.test(word)
        ? 'stale'
        : /REVALIDATED/.test(word)
          ? 'revalidated'
          : /MISS|EXPIRED|BYPASS|DYNAMIC/.test(word)
            ? 'miss'
            : 'unknown'
    return { status, evidence: `${name}: ${value}` }
  }
  const age = Number(header(exchange.responseHeaders, 'age'))
  if (age > 0) return { status: 'hit', evidence: `age: ${age}` }
  return { status: 'unknown', evidence: null }
}

/** The protocol messages of an exchange's body (SSE frames or a JSON array), and whether some could not be read. */
export function messagesOf(exchange: RawExchange, sse: boolean): { messages: Message[]; unreadable: boolean } {
  const texts: string[] = []
  if (exchange.frames.length > 0 || sse) {
    const parser = new SseParser()
    const frames =
      exchange.frames.length > 0
        ? exchange.frames.flatMap((frame) => parser.push(`${frame.raw}\n\n`))
        : [...parser.push(exchange.body ?? ''), ...parser.end()]
    for (const frame of frames) if (frame.kind === 'data') texts.push(frame.data)
  } else if (exchange.body) texts.push(exchange.body)
  const messages: Message[] = []
  let unreadable = exchange.truncated
  for (const text of texts) {
    try {
      const json: unknown = JSON.parse(text)
      for (const item of Array.isArray(json) ? json : [json]) {
        const message = MessageSchema.safeParse(item)
        if (message.success) messages.push(message.data)
        else unreadable = true
      }
    } catch {
      unreadable = true
    }
  }
  return { messages, unreadable }
}

/** The masked URL without the parameters that move along the log: which shape a request is for. */
function shapeOf(url: URL): string {
  const params = [...url.searchParams]
    .filter(([name]) => !POSITION_PARAM_SET.has(name) && !isCredentialParam(name))
    .sort(([a], [b]) => a.localeCompare(b))
  return `${url.origin}${url.pathname}${params.length > 0 ? `?${new URLSearchParams(params).toString()}` : ''}`
}

/** The shape requests of a recording, numbered from 1 in the order they were sent. */
export function buildTimeline(exchanges: readonly RawExchange[]): ShapeExchange[] {
  const shapeRequests = exchanges.filter(isShapeRequest).sort((a, b) => a.startedAt - b.startedAt)
  const start = shapeRequests[0]?.startedAt ?? 0
  return shapeRequests.map((raw, index): ShapeExchange => {
    const url = new URL(raw.url)
    const param = (name: string) => url.searchParams.get(name)
    const live =
      param('live') === 'true'
        ? param('live_sse') === 'true' || header(raw.requestHeaders, 'accept') === 'text/event-stream'
          ? 'sse'
          : 'long-poll'
        : 'off'
    const brand = brandOf(raw)
    const get = (name: ProtocolHeader) => (brand ? header(raw.responseHeaders, headerName(brand, name)) : null)
    const contentType = header(raw.responseHeaders, 'content-type') ?? ''
    const { messages, unreadable } =
      (raw.status !== null && raw.status < 300) || raw.status === 409
        ? messagesOf(raw, live === 'sse' || contentType.includes('event-stream'))
        : { messages: [], unreadable: false }
    const controls = messages.flatMap((message) => ('control' in message.headers ? [message.headers.control] : []))
    const changes = messages.flatMap((message) =>
      'key' in message ? [{ key: message.key, operation: message.headers.operation }] : []
    )
    return {
      raw,
      brand,
      changes,
      unreadable,
      entry: {
        n: index + 1,
        atMs: Math.round(raw.startedAt - start),
        method: raw.method,
        url: maskUrl(raw.url),
        shape: shapeOf(url),
        request: {
          offset: param('offset'),
          handle: param('handle'),
          cursor: param('cursor'),
          live,
          cacheBuster: url.searchParams.has('cache-buster')
        },
        status: raw.status,
        error: raw.error,
        response: {
          handle: get('handle'),
          offset: get('offset'),
          cursor: get('cursor'),
          upToDate: get('up-to-date') !== null || controls.includes(CONTROL.upToDate),
          mustRefetch: raw.status === 409 || controls.includes(CONTROL.mustRefetch),
          changes: changes.length
        },
        cache: cacheStatusOf(raw),
        headMs: raw.headMs,
        endMs: raw.endMs
      }
    }
  })
}
