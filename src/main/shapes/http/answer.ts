import type { ProtocolHeaderNames } from '../../../shared/protocol'
import { schemaHeader } from '../definition/table-info'
import { type LogOffset, formatOffset } from '../storage/offset'
import type { ChunkSource, Shape } from '../storage/shape'
import { CACHE_CONTROL, monotonicTag, nextCursor } from './protocol'

export type HeaderMap = Record<string, string>

interface LogAnswerBase {
  kind: 'log'
  shape: Shape
  /** The offset the request named, as it named it (`-1`, `now`, `…_…`). */
  requested: string
  /** Where the answer ends. */
  offset: LogOffset
  /** What it was read from: the first snapshot chunk, a later one, `offset=now`, or the log. */
  source: 'initial' | 'snapshot' | 'now' | 'log'
  upToDate: boolean
  hasData: boolean
  /** "No changes" answers get a monotonic etag suffix, so they never revalidate. */
  noChange: boolean
}

/** A log answer whose bytes are built only when sent (never when an identical request's answer is shared). */
export interface BytesAnswer extends LogAnswerBase {
  body: () => Buffer
}

/** A chunk (snapshot chunk or log range from disk), shared with every reader of it, then `suffix`. */
export interface ChunkAnswer extends LogAnswerBase {
  chunk: ChunkSource
  suffix: Buffer | null
}

export type LogAnswer = BytesAnswer | ChunkAnswer

/** What a shape request is answered with, as a value: answerHeaders() decides its headers and caching. */
export type ShapeAnswer =
  | LogAnswer
  /** The head of an SSE stream; the live stage writes the rest. */
  | { kind: 'sse'; shape: Shape; requested: string; offset: LogOffset }
  | { kind: 'subset'; shape: Shape; offset: LogOffset; body: string }
  /** 409: the client refetches, from `current` when a shape serves the definition now. */
  | { kind: 'must-refetch'; current: Shape | null }
  /** Any other status with a JSON body: errors (400, 413, 503, …) and the server's own JSON pages. */
  | { kind: 'json'; status: number; body: unknown; headers?: HeaderMap }

/** What of the request and of the server's settings decides a shape answer's headers. */
export interface AnswerTerms {
  names: ProtocolHeaderNames
  /** `live=true`: the answer's caching is short and it carries the next cursor. */
  live: boolean
  cursor: string | null
  longPollTimeout: number
  /** POSTs are never cached. */
  noCache: boolean
  /** cache-control of catch-up answers (catchUpCacheControl of the server's settings). */
  catchUpCache: string
  /** cache-control of an SSE stream (sseCacheControl of its lifetime). */
  sseCache: string
}

/** The one place where caching is decided, from what the answer is (and, for log answers, what was asked). */
export function cacheControl(
  answer: ShapeAnswer,
  terms?: Pick<AnswerTerms, 'live' | 'noCache' | 'catchUpCache' | 'sseCache'>
): HeaderMap {
  switch (answer.kind) {
    case 'log': {
      if (!terms || terms.noCache) return { 'cache-control': CACHE_CONTROL.noCache }
      if (answer.source === 'initial') return { 'cache-control': CACHE_CONTROL.initial }
      const live = terms.live && answer.source === 'log'
      return { 'cache-control': live ? CACHE_CONTROL.live : terms.catchUpCache }
    }
    case 'sse':
      return { 'cache-control': terms?.sseCache ?? CACHE_CONTROL.noCache }
    case 'subset':
      return { 'cache-control': CACHE_CONTROL.noCache }
    case 'must-refetch':
      return { 'cache-control': CACHE_CONTROL.conflict(answer.current !== null) }
    case 'json':
      return answer.status >= 400 ? { 'cache-control': CACHE_CONTROL.error, 'surrogate-control': 'no-store' } : {}
  }
}

const JSON_TYPE = 'application/json; charset=utf-8'

export type JsonAnswer = Extract<ShapeAnswer, { kind: 'json' }>
type RefetchAnswer = Extract<ShapeAnswer, { kind: 'must-refetch' }>

/** Every header of a shape answer: the protocol's, content type, etag and caching (CORS and server: the Responder's). */
export function answerHeaders(answer: JsonAnswer): HeaderMap
export function answerHeaders(answer: RefetchAnswer, terms: Pick<AnswerTerms, 'names'>): HeaderMap
export function answerHeaders(answer: ShapeAnswer, terms: AnswerTerms): HeaderMap & { etag?: string }
export function answerHeaders(answer: ShapeAnswer, given?: Pick<AnswerTerms, 'names'>): HeaderMap & { etag?: string } {
  if (answer.kind === 'json') return { 'content-type': JSON_TYPE, ...cacheControl(answer), ...answer.headers }
  if (answer.kind === 'must-refetch') {
    const { current } = answer
    const headers: HeaderMap = {
      'content-type': JSON_TYPE,
      ...cacheControl(answer),
      etag: `"${current?.handle ?? ''}::"`
    }
    if (current) headers[(given as AnswerTerms).names.handle] = current.handle
    return headers
  }
  // the other kinds come with the request's whole terms (see the overloads)
  const terms = given as AnswerTerms
  const { names } = terms
  switch (answer.kind) {
    case 'log': {
      const { shape, requested, offset } = answer
      const headers: HeaderMap & { etag: string } = {
        ...shapeHeaders(shape, offset, terms),
        'content-type': JSON_TYPE,
        ...cacheControl(answer, terms),
        etag: `"${shape.handle}:${requested}:${formatOffset(offset)}${answer.noChange ? `:${monotonicTag()}` : ''}"`,
        [names.hasData]: String(answer.hasData)
      }
      if (answer.upToDate) headers[names.upToDate] = ''
      // live answers leave the schema out: the client has it
      if (!terms.live)
        headers[names.schema] = JSON.stringify(schemaHeader(shape.definition.table, shape.definition.columns))
      return headers
    }
    case 'sse':
      return {
        ...shapeHeaders(answer.shape, answer.offset, terms),
        'content-type': 'text/event-stream',
        ...cacheControl(answer, terms),
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        etag: `"${answer.shape.handle}:${answer.requested}:${formatOffset(answer.offset)}"`,
        [names.upToDate]: ''
      }
    case 'subset': {
      const { definition, handle } = answer.shape
      return {
        'content-type': JSON_TYPE,
        ...cacheControl(answer),
        [names.snapshot]: 'true',
        [names.handle]: handle,
        [names.offset]: formatOffset(answer.offset),
        [names.schema]: JSON.stringify(schemaHeader(definition.table, definition.columns))
      }
    }
  }
}

function shapeHeaders(shape: Shape, offset: LogOffset, terms: AnswerTerms): HeaderMap {
  const { names } = terms
  const headers: HeaderMap = { [names.handle]: shape.handle, [names.offset]: formatOffset(offset) }
  if (terms.live) headers[names.cursor] = String(nextCursor(terms.longPollTimeout, terms.cursor))
  return headers
}
