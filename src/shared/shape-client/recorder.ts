import { isCredentialHeader, isCredentialParam } from './credentials'
import type { Message } from './messages'
import type { SseFrame } from './sse'

/** Milliseconds since the epoch, with sub-millisecond precision where the platform has it. */
export const now = (): number => performance.timeOrigin + performance.now()

const NON_ASCII = /[\u0080-\uffff]/

/** A text's size in UTF-8 (a lone surrogate counted as the three bytes of U+FFFD), without encoding it. */
export function utf8Length(text: string): number {
  if (!NON_ASCII.test(text)) return text.length
  let bytes = 0
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code < 0xdc00 && (text.charCodeAt(at + 1) & 0xfc00) === 0xdc00) {
      bytes += 4
      at += 1
    } else bytes += 3
  }
  return bytes
}

export type LiveMode = 'off' | 'long-poll' | 'sse'
export type HeaderList = Array<[name: string, value: string]>

export interface RecordedRequest {
  id: number
  at: number
  method: string
  url: string
  headers: HeaderList
  /** What kind of request the stream made: initial sync / catch-up, or live. */
  live: LiveMode
}

export interface RecordedResponse {
  at: number
  status: number
  statusText: string
  headers: HeaderList
}

export interface RecordedBody {
  at: number
  /** Bytes received. */
  size: number
  /** The body text, cut at the recorder's limit. */
  text: string
  truncated: boolean
}

/** One HTTP exchange of the stream, filled in as it progresses. */
export interface Exchange {
  request: RecordedRequest
  response?: RecordedResponse
  body?: RecordedBody
  /** A network failure or abort, instead of (or in the middle of) a response. */
  failure?: { at: number; message: string }
}

export type RecordEntry =
  | { type: 'request'; at: number; requestId: number }
  | { type: 'response'; at: number; requestId: number }
  | { type: 'message'; at: number; requestId: number; message: Message; offset: string | null }
  | { type: 'sse-frame'; at: number; requestId: number; frame: SseFrame }
  | { type: 'note'; at: number; level: 'info' | 'warn' | 'error'; text: string }

export interface RecorderOptions {
  /** Longest body text kept per exchange. */
  maxBodyChars?: number
  /** Oldest entries and exchanges are dropped beyond this many. */
  maxEntries?: number
}

/** Shows enough of a secret to tell two apart, never the whole. */
export function maskSecret(value: string): string {
  return value.length <= 8 ? '•••' : `${value.slice(0, 4)}…(${value.length} chars)`
}

export function maskUrl(url: string): string {
  const parsed = new URL(url)
  for (const [name, value] of [...parsed.searchParams])
    if (isCredentialParam(name)) parsed.searchParams.set(name, maskSecret(value))
  return parsed.toString()
}

/**
 * The first `length` characters of a text, as a string of its own: V8's slices point into their parent, so a kept cut
 * of a 10 MB body would keep the whole body alive.
 */
function detachedPrefix(text: string, length: number): string {
  if (text.length <= length) return text
  return JSON.parse(JSON.stringify(text.slice(0, length))) as string
}

export const maskHeaders = (headers: HeaderList): HeaderList =>
  headers.map(([name, value]) => [name, isCredentialHeader(name) ? maskSecret(value) : value])

/**
 * Everything a shape stream did, in order: requests (secrets masked), responses with every header, bodies, parsed
 * messages, raw SSE frames and notes (retries, fallbacks). Listeners hear about every change; the UI reads it.
 */
export class ShapeRecorder {
  readonly entries: RecordEntry[] = []
  readonly exchanges: Exchange[] = []
  private readonly byId = new Map<number, Exchange>()
  private readonly listeners = new Set<() => void>()
  private nextId = 1
  private readonly maxBodyChars: number
  private readonly maxEntries: number

  constructor(options: RecorderOptions = {}) {
    this.maxBodyChars = options.maxBodyChars ?? 200_000
    this.maxEntries = options.maxEntries ?? 100_000
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  request(method: string, url: string, headers: HeaderList, live: LiveMode): number {
    const id = this.nextId++
    const exchange: Exchange = {
      request: { id, at: now(), method, url: maskUrl(url), headers: maskHeaders(headers), live }
    }
    this.exchanges.push(exchange)
    this.byId.set(id, exchange)
    this.add({ type: 'request', at: exchange.request.at, requestId: id })
    return id
  }

  response(requestId: number, response: Omit<RecordedResponse, 'at'>): void {
    const exchange = this.byId.get(requestId)
    const at = now()
    if (exchange) exchange.response = { ...response, at }
    this.add({ type: 'response', at, requestId })
  }

  /** The body so far: called as chunks arrive (SSE) and once at the end. */
  body(requestId: number, text: string, size: number): void {
    const exchange = this.byId.get(requestId)
    if (!exchange) return
    exchange.body = {
      at: now(),
      size,
      text: detachedPrefix(text, this.maxBodyChars),
      truncated: text.length > this.maxBodyChars
    }
    this.notify()
  }

  failure(requestId: number, message: string): void {
    const exchange = this.byId.get(requestId)
    if (exchange) exchange.failure = { at: now(), message }
    this.notify()
  }

  message(requestId: number, message: Message, offset: string | null): void {
    this.add({ type: 'message', at: now(), requestId, message, offset })
  }

  sseFrame(requestId: number, frame: SseFrame): void {
    this.add({ type: 'sse-frame', at: now(), requestId, frame })
  }

  note(level: 'info' | 'warn' | 'error', text: string): void {
    this.add({ type: 'note', at: now(), level, text })
  }

  private add(entry: RecordEntry): void {
    this.entries.push(entry)
    // Trimmed a tenth at a time, so a full recorder does not copy its whole array on every entry.
    if (this.entries.length > this.maxEntries) this.entries.splice(0, Math.ceil(this.maxEntries / 10))
    if (this.exchanges.length > this.maxEntries) {
      for (const dropped of this.exchanges.splice(0, Math.ceil(this.maxEntries / 10)))
        this.byId.delete(dropped.request.id)
    }
    this.notify()
  }

  private notify(): void {
    for (const listener of this.listeners) listener()
  }
}
