import { isCallersQueryError } from '../../sql'
import type { ResolvedShape } from '../definition/definition'
import type { Cancellation } from '../live/cancellation'
import type { LiveSettings } from '../live/live-settings'
import type { LiveShape } from '../live/live-shape'
import type { LongPoll } from '../live/long-polls'
import type { PreparedAnswer } from '../live/prepared-answers'
import type { ShapeService } from '../service'
import { upToDateMessage } from '../storage/messages'
import {
  type LogOffset,
  SNAPSHOT_END,
  compareOffsets,
  formatOffset,
  isSnapshotOffset,
  readPosition
} from '../storage/offset'
import type { ChunkSource, Shape } from '../storage/shape'
import { ShapeTooLargeError } from '../storage/shape-limits'
import type { LogSlice } from '../storage/shape-log'
import {
  type AnswerTerms,
  type BytesAnswer,
  type ChunkAnswer,
  type JsonAnswer,
  type LogAnswer,
  type ShapeAnswer,
  answerHeaders
} from './answer'
import { releaseSource } from './chunk-body'
import { arrayBody, etagMatches } from './protocol'
import { type Responder, writePreparedToAll } from './responder'
import type { ShapeRequest } from './shape-request'

/** What a log request is answered with through `send` (an SSE stream writes its own head). */
type Found = Exclude<ShapeAnswer, { kind: 'sse' | 'subset' }>

/** How long a request for the next snapshot chunk waits for it to be written. */
const SNAPSHOT_WAIT_MS = 60_000

/** One GET (or body-less POST) of /v1/shape: what it asks, where its answer goes, what decides its headers. */
export interface LogRequest {
  r: Responder
  request: ShapeRequest
  definition: ResolvedShape
  terms: AnswerTerms
  settings: LiveSettings
  /** Cancelled when the client goes away. */
  cancellation: Cancellation
}

/**
 * Serves GET (and body-less POST) /v1/shape: the initial chunk, `now`, catch-up, long-poll and SSE. The answer is
 * found as a value, then sent; a held long-poll or an SSE stream is answered by the live stage instead (null).
 */
export async function serveLog(service: ShapeService, ask: LogRequest): Promise<void> {
  const answer = await logAnswer(service, ask)
  if (answer) send(service, ask, answer)
}

async function logAnswer(service: ShapeService, ask: LogRequest): Promise<Found | null> {
  const { request, definition } = ask
  if (request.offset.kind === 'start') return startAnswer(service, ask, await service.shapeFor(definition))
  if (request.offset.kind === 'now') return nowAnswer(service, ask, await service.shapeFor(definition))
  const active = service.active(definition.identity)
  if (!active || active.handle !== request.handle)
    return { kind: 'must-refetch', current: active ?? (await service.shapeFor(definition)) }
  service.used(active)
  return continueLog(service, ask, active, request.offset.offset)
}

async function startAnswer(service: ShapeService, ask: LogRequest, shape: Shape): Promise<Found> {
  await service.live.of(shape).waitFor(() => shape.readyChunks >= 1, SNAPSHOT_WAIT_MS, ask.cancellation)
  if (shape.readyChunks < 1) return unavailableShape(service, ask, shape)
  const chunk = await shape.readChunk(0)
  const offset = { tx: 0n, op: 0 }
  return chunkAnswer(shape, '-1', offset, 'initial', { chunk, suffix: null, upToDate: false })
}

/**
 * Waits for the shape's snapshot to be taken: the log holds only what it did not see, so a change committed after an
 * earlier answer (and before the snapshot) would be lost to this client.
 */
async function nowAnswer(service: ShapeService, ask: LogRequest, shape: Shape): Promise<Found> {
  const live = service.live.of(shape)
  if (!(await live.waitFor(() => shape.snapshot !== null, SNAPSHOT_WAIT_MS, ask.cancellation)))
    return unavailableShape(service, ask, shape)
  return upToDateAnswer(service, shape, 'now', shape.lastOffset, 'now', true)
}

async function continueLog(
  service: ShapeService,
  ask: LogRequest,
  shape: Shape,
  requestedOffset: LogOffset
): Promise<Found | null> {
  const { request, cancellation } = ask
  const live = service.live.of(shape)
  const requested = formatOffset(requestedOffset)
  let offset = requestedOffset
  if (isSnapshotOffset(offset)) {
    const next = offset.op + 1
    await live.waitFor(() => shape.readyChunks > next || shape.snapshotChunks !== null, SNAPSHOT_WAIT_MS, cancellation)
    if (shape.readyChunks > next) {
      const chunk = await shape.readChunk(next)
      return chunkAnswer(shape, requested, { tx: 0n, op: next }, 'snapshot', { chunk, suffix: null, upToDate: false })
    }
    if (shape.snapshotChunks === null) return unavailableShape(service, ask, shape)
    offset = SNAPSHOT_END
  }
  const reached = () => compareOffsets(offset, shape.lastOffset) <= 0
  if (!reached() && !(await live.waitFor(reached, ask.settings.longPollTimeout / 2, cancellation))) {
    if (shape.invalidated) return { kind: 'must-refetch', current: await replacement(service, ask.definition) }
    return invalidRequest({ offset: ['out of bounds for this shape'] })
  }
  if (request.liveSse) {
    const behind = refusedWhileBehind(service, request)
    return behind ?? streamSse(ask, live, { kind: 'sse', shape, requested, offset })
  }
  if (!request.live) {
    const fromDisk = await shape.readLogBody(readPosition(offset))
    if (fromDisk) return catchUpAnswer(service, shape, requested, fromDisk)
  }
  const slice = await shape.readLogAfter(readPosition(offset))
  if (slice) return dataAnswer(service, request, shape, requested, slice)
  if (!request.live) return upToDateAnswer(service, shape, requested, offset, 'log', false)
  await live.longPolls.hold(new HeldLongPoll(service, ask, shape, offset, requested), offset, answerTogether)
  return null
}

/**
 * SSE live mode: the headers go out at once, then the live stage's hub streams everything the log holds after the
 * offset and each later change as it lands, with `: keep-alive` comments when idle, until the stream's lifetime (below
 * the cache max-age) ends, the shape is dropped, or the client goes away. Unlike the reference, a stream that starts
 * behind is not ended once it caught up (the official client counts a stream shorter than a second as a buffering
 * proxy and, after three, gives up on SSE). The headers carry the requested offset: a stream cut before its first
 * up-to-date leaves the client there.
 */
async function streamSse(ask: LogRequest, live: LiveShape, head: ShapeAnswer & { kind: 'sse' }): Promise<null> {
  const { r, cancellation } = ask
  r.res.writeHead(200, { ...r.baseHeaders(), ...answerHeaders(head, ask.terms) })
  r.res.flushHeaders()
  if (r.head || cancellation.cancelled) r.res.end()
  else await live.streams.stream(r.res, readPosition(head.offset), ask.settings, cancellation)
  return null
}

/**
 * A live long-poll waiting in its shape's LongPolls (live/long-polls.ts). Identical ones (same shape, offset, cursor,
 * origin, conditions) wait together; conditional ones wait together but are answered alone.
 */
class HeldLongPoll implements LongPoll {
  readonly key: string
  readonly timeoutMs: number
  readonly cancellation: Cancellation

  constructor(
    readonly service: ShapeService,
    readonly ask: LogRequest,
    readonly shape: Shape,
    readonly offset: LogOffset,
    readonly requested: string
  ) {
    const { r, request, terms } = ask
    this.timeoutMs = ask.settings.longPollTimeout
    this.cancellation = ask.cancellation
    const conditions = [r.req.headers.origin ?? '', terms.noCache, r.head, r.req.headers['if-none-match'] ?? '']
    this.key = [request.cursor ?? '', ...conditions, isShareable(ask)].join('\u0000')
  }

  /** Timed out, cancelled, conditional, or its group could not share an answer. */
  async answerAlone(): Promise<void> {
    const { service, ask, shape, offset, requested } = this
    if (shape.invalidated)
      return send(service, ask, { kind: 'must-refetch', current: await replacement(service, ask.definition) })
    const slice = await shape.readLogAfter(readPosition(offset))
    const answer = slice
      ? dataAnswer(service, ask.request, shape, requested, slice)
      : upToDateAnswer(service, shape, requested, offset, 'log', true)
    send(service, ask, answer)
  }
}

/**
 * A woken group's answer, built once when its members may share it (they share their key, so all of them can when
 * the first can), written to all of them before any response is ended.
 */
function answerTogether(polls: readonly HeldLongPoll[], slice: LogSlice): boolean {
  const first = polls[0]
  if (!first || !isShareable(first.ask)) return false
  const { service, ask, shape, requested } = first
  const prepared = shared(service, ask, dataAnswer(service, ask.request, shape, requested, slice))
  const wire = writePreparedToAll(
    polls.map((poll) => poll.ask.r),
    prepared
  )
  polls.forEach((poll, i) => wire[i] && poll.ask.r.endWritten())
  return true
}

function chunkAnswer(
  shape: Shape,
  requested: string,
  offset: LogOffset,
  source: LogAnswer['source'],
  read: { chunk: ChunkSource; suffix: Buffer | null; upToDate: boolean }
): ChunkAnswer {
  return { kind: 'log', shape, requested, offset, source, hasData: true, noChange: false, ...read }
}

/** An answer with no entries, at the log's end: for `now`, a caught-up catch-up, or a long-poll with no change. */
function upToDateAnswer(
  service: ShapeService,
  shape: Shape,
  requested: string,
  offset: LogOffset,
  source: 'now' | 'log',
  noChange: boolean
): BytesAnswer {
  const body = () => arrayBody(null, upToDateMessage(service.seenLsn(shape)))
  return { kind: 'log', shape, requested, body, offset, source, upToDate: true, hasData: !noChange, noChange }
}

function dataAnswer(
  service: ShapeService,
  request: ShapeRequest,
  shape: Shape,
  requested: string,
  slice: LogSlice
): BytesAnswer {
  const atEnd = compareOffsets(slice.end, shape.lastOffset) >= 0
  const lsn = request.live ? slice.end.tx : maxBigint(service.seenLsn(shape), slice.end.tx)
  const body = () => (atEnd ? arrayBody(slice.lines, upToDateMessage(lsn)) : arrayBody(slice.lines))
  return {
    kind: 'log',
    shape,
    requested,
    body,
    offset: slice.end,
    source: 'log',
    upToDate: atEnd,
    hasData: true,
    noChange: false
  }
}

/** A catch-up answer with a log range read from disk: the range's shared bytes, then `]` or the up-to-date and `]`. */
function catchUpAnswer(
  service: ShapeService,
  shape: Shape,
  requested: string,
  read: { end: LogOffset; source: ChunkSource }
): ChunkAnswer {
  const atEnd = compareOffsets(read.end, shape.lastOffset) >= 0
  const lsn = maxBigint(service.seenLsn(shape), read.end.tx)
  const suffix = Buffer.from(atEnd ? `,${upToDateMessage(lsn)}]` : ']')
  return chunkAnswer(shape, requested, read.end, 'log', { chunk: read.source, suffix, upToDate: atEnd })
}

const maxBigint = (a: bigint, b: bigint): bigint => (a > b ? a : b)

const invalidRequest = (errors: Record<string, unknown>): JsonAnswer => ({
  kind: 'json',
  status: 400,
  body: { message: 'Invalid request', errors }
})

const unavailable = (message: string, retryAfter: number, extra: Record<string, string> = {}): JsonAnswer => ({
  kind: 'json',
  status: 503,
  body: { message },
  headers: { 'retry-after': String(retryAfter), ...extra }
})

/**
 * No answer claims up-to-date while the server's own writes fail (stalled), nor a live one while the replication
 * stream is down (waiting): 503 with retry-after instead. A catch-up answer then is current as of its snapshot.
 */
function refusedWhileBehind(service: ShapeService, request: ShapeRequest): JsonAnswer | null {
  const health = service.health()
  if (health.status === 'active' || (health.status === 'waiting' && !request.live)) return null
  return unavailable(`The shape server is behind Postgres, please retry: ${health.message}`, 5)
}

/** Writes an answer found by serveLog or a long-poll: the one way a log request's answer leaves. */
function send(service: ShapeService, ask: LogRequest, found: Found): void {
  const { r, terms } = ask
  const behind = found.kind === 'log' && found.upToDate ? refusedWhileBehind(service, ask.request) : null
  if (behind && 'chunk' in found) releaseSource(found.chunk)
  const answer = behind ?? found
  if (answer.kind === 'json') return r.json(answer.status, answer.body, answer.headers)
  if (answer.kind === 'must-refetch') return r.mustRefetch(answer.current)
  const prepared = 'body' in answer && isShareable(ask) && !answer.noChange ? shared(service, ask, answer) : null
  if (prepared) return r.sendPrepared(prepared)
  const headers = answerHeaders(answer, terms)
  if (etagMatches(r.req.headers['if-none-match'], headers.etag ?? '')) {
    if ('chunk' in answer) releaseSource(answer.chunk)
    // what describes the body (the schema) stays with the body
    const { [terms.names.schema]: _schema, ...notModified } = headers
    return r.send(304, notModified, null)
  }
  if ('chunk' in answer) return r.sendChunk(200, headers, answer.chunk, answer.suffix)
  r.send(200, headers, answer.body())
}

/**
 * When one change wakes many identical long-polls (a CDN's miss, a thousand tabs), the answer is built once: same
 * request, same log end, same cursor and origin. Only live answers with data are shared (they are small; catch-up
 * chunks of up to 10 MiB are not kept); conditional and "no change" answers are always built anew.
 */
const isShareable = ({ request, r }: LogRequest): boolean =>
  request.live && r.req.headers['if-none-match'] === undefined && !r.head

function shared(service: ShapeService, ask: LogRequest, answer: BytesAnswer): PreparedAnswer {
  const { r, request, terms } = ask
  const origin = r.req.headers.origin ?? ''
  const key = [answer.requested, formatOffset(answer.offset), request.cursor ?? '', origin, terms.noCache].join(
    '\u0000'
  )
  return service.live.of(answer.shape).prepared.get(answer.shape.lastOffset, key, () => {
    const body = answer.body()
    return { headers: r.flatHeaders(answerHeaders(answer, terms), body), body }
  })
}

/** A shape that failed or was dropped while the request waited for its snapshot. */
async function unavailableShape(service: ShapeService, ask: LogRequest, shape: Shape): Promise<Found> {
  const { failure } = shape
  if (shape.invalidated && !failure)
    return { kind: 'must-refetch', current: await replacement(service, ask.definition) }
  // a where that Postgres cannot evaluate on the table's rows (division by zero, a bad cast), or a table it may not read
  if (isCallersQueryError(failure))
    return invalidRequest({ [failure.code === '42501' ? 'table' : 'where']: [failure.message] })
  if (failure instanceof ShapeTooLargeError) return tooLarge(failure)
  if (failure) return unavailable('Failed to create shape, please retry', 1)
  return unavailable('Timed out waiting for the shape snapshot, please retry', 10, {
    [ask.terms.names.knownError]: 'true'
  })
}

/** 413 for a shape whose snapshot alone does not fit the disk budget, naming the limit. */
export const tooLarge = (error: ShapeTooLargeError): JsonAnswer => ({
  kind: 'json',
  status: 413,
  body: { code: 'shape_too_large', message: `The shape was not built: ${error.message}`, limit: error.limitBytes }
})

/**
 * The shape that takes over from one dropped while a request held it: the definition is resolved again (the table
 * may have changed), and none is offered when it no longer resolves.
 */
export async function replacement(service: ShapeService, definition: ResolvedShape): Promise<Shape | null> {
  try {
    return await service.shapeFor(await service.resolve(definition.input))
  } catch {
    return null
  }
}
