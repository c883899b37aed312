import type { Cancellation } from '../live/cancellation'
import type { ResolvedShape } from '../definition/definition'
import {
  type LogOffset,
  SNAPSHOT_END,
  compareOffsets,
  formatOffset,
  isSnapshotOffset,
  readPosition
} from '../storage/offset'
import type { ShapeService } from '../service'
import type { ChunkSource, Shape } from '../storage/shape'
import { type PreparedAnswer, preparedAnswer } from '../live/prepared-answers'
import type { LogSlice } from '../storage/shape-log'
import { schemaHeader } from '../definition/table-info'
import { isCallersQueryError } from '../../sql'
import { ShapeTooLargeError } from '../storage/shape-limits'
import { CACHE_CONTROL, arrayBody, etagMatches, monotonicTag, mustRefetchBody, upToDateMessage } from './protocol'
import { type HeaderMap, type Responder, writePreparedToAll } from './responder'
import type { ShapeRequest } from './shape-request'
import { releaseSource } from './chunk-body'
import { streamSse } from './sse'
import { PARALLEL_FROM, parallelWrites } from './parallel-writes'
import { hasNews, shapeHeaders } from './live-answer'

export interface LiveSettings {
  longPollTimeout: number
  sseKeepAlive: number
  sseLifetime: number
}

/** How long a request for the next snapshot chunk waits for it to be written. */
const SNAPSHOT_WAIT_MS = 60_000

export interface LogRequestContext {
  r: Responder
  service: ShapeService
  request: ShapeRequest
  definition: ResolvedShape
  live: LiveSettings
  /** POSTs are never cached. */
  noCache: boolean
  /** cache-control of catch-up answers (catchUpCacheControl of the server's settings). */
  catchUpCache: string
  /** Cancelled when the client goes away. */
  cancellation: Cancellation
}

interface AnswerBase {
  shape: Shape
  requested: string
  offset: LogOffset
  cacheControl: string
  upToDate: boolean
  hasData: boolean
  /** "No changes" answers get a monotonic etag suffix, so they never revalidate. */
  noChange: boolean
}

interface BytesAnswer extends AnswerBase {
  /** Built only when the answer is not shared with an identical request. */
  body: () => Buffer
}

/** A chunk (snapshot chunk or log range from disk), shared with every reader of it, then `suffix`. */
interface ChunkAnswer extends AnswerBase {
  chunk: ChunkSource
  suffix: Buffer | null
}

type LogAnswer = BytesAnswer | ChunkAnswer

/** Serves GET (and body-less POST) /v1/shape: the initial chunk, `now`, catch-up, long-poll and SSE. */
export async function serveLog(context: LogRequestContext): Promise<void> {
  const { request, service, definition } = context
  if (request.offset.kind === 'start')
    return answer(context, await startAnswer(context, await service.shapeFor(definition)))
  if (request.offset.kind === 'now')
    return answer(context, await nowAnswer(context, await service.shapeFor(definition)))
  const active = service.active(definition.identity)
  if (!active || active.handle !== request.handle)
    return conflict(context, active ?? (await service.shapeFor(definition)))
  service.used(active)
  return continueLog(context, active, request.offset.offset)
}

async function startAnswer(context: LogRequestContext, shape: Shape): Promise<LogAnswer | Shape> {
  await shape.waitFor(() => shape.readyChunks >= 1, SNAPSHOT_WAIT_MS, context.cancellation)
  if (shape.readyChunks < 1) return shape
  const chunk = await shape.readChunk(0)
  return {
    shape,
    requested: '-1',
    chunk,
    suffix: null,
    offset: { tx: 0n, op: 0 },
    cacheControl: CACHE_CONTROL.initial,
    upToDate: false,
    hasData: true,
    noChange: false
  }
}

/**
 * Waits for the shape's snapshot to be taken: the log holds only what it did not see, so a change committed after an
 * earlier answer (and before the snapshot) would be lost to this client.
 */
async function nowAnswer(context: LogRequestContext, shape: Shape): Promise<BytesAnswer | Shape> {
  if (!(await shape.waitFor(() => shape.snapshot !== null, SNAPSHOT_WAIT_MS, context.cancellation))) return shape
  const body = () => arrayBody(null, upToDateMessage(context.service.seenLsn(shape)))
  return {
    shape,
    requested: 'now',
    body,
    offset: shape.lastOffset,
    cacheControl: context.catchUpCache,
    upToDate: true,
    hasData: false,
    noChange: true
  }
}

async function continueLog(context: LogRequestContext, shape: Shape, offset: LogOffset): Promise<void> {
  const requested = formatOffset(offset)
  if (isSnapshotOffset(offset)) {
    const next = offset.op + 1
    await shape.waitFor(
      () => shape.readyChunks > next || shape.snapshotChunks !== null,
      SNAPSHOT_WAIT_MS,
      context.cancellation
    )
    if (shape.readyChunks > next) {
      const chunk = await shape.readChunk(next)
      const cacheControl = context.catchUpCache
      return answer(context, {
        shape,
        requested,
        chunk,
        suffix: null,
        offset: { tx: 0n, op: next },
        cacheControl,
        upToDate: false,
        hasData: true,
        noChange: false
      })
    }
    if (shape.snapshotChunks === null) return answer(context, shape)
    offset = SNAPSHOT_END
  }
  if (
    compareOffsets(offset, shape.lastOffset) > 0 &&
    !(await shape.waitFor(
      () => compareOffsets(offset, shape.lastOffset) <= 0,
      context.live.longPollTimeout / 2,
      context.cancellation
    ))
  ) {
    if (shape.invalidated) return conflict(context, await replacement(context))
    return context.r.invalidRequest({ offset: ['out of bounds for this shape'] })
  }
  if (context.request.liveSse)
    return refusedWhileBehind(context) ? undefined : streamSse(context, shape, offset, requested)
  if (!context.request.live) {
    const fromDisk = await shape.readLogBody(readPosition(offset))
    if (fromDisk) return answer(context, catchUpAnswer(context, shape, requested, fromDisk))
  }
  const slice = await shape.readLogAfter(readPosition(offset))
  if (slice) return answer(context, dataAnswer(context, shape, requested, slice))
  if (!context.request.live) {
    const body = () => arrayBody(null, upToDateMessage(context.service.seenLsn(shape)))
    return answer(context, {
      shape,
      requested,
      body,
      offset,
      cacheControl: context.catchUpCache,
      upToDate: true,
      hasData: true,
      noChange: false
    })
  }
  return holdLongPoll(context, shape, offset, requested)
}

/**
 * Identical live long-polls (same shape, offset, cursor, origin, conditions) wait together. One wake-up of the shape
 * checks the log once, builds the answer once and writes it to every member in one pass, with no promise hop or
 * per-request work between them: how one change reaches a thousand waiting clients quickly.
 */
class LongPollGroup {
  private readonly members = new Set<LongPollMember>()

  constructor(
    private readonly shape: Shape,
    private readonly offset: LogOffset,
    private readonly requested: string,
    private readonly close: () => void
  ) {
    this.listen()
  }

  /** Waits with the group until the shape grows; on the member's own timeout or cancel it leaves and is answered alone. */
  join(context: LogRequestContext): Promise<void> {
    return new Promise((resolve) => {
      const leave = (): void => {
        if (!this.members.delete(member)) return
        member.release()
        resolve(finishLongPoll(context, this.shape, this.offset, this.requested))
      }
      const timer = setTimeout(leave, context.live.longPollTimeout)
      const stopListening = context.cancellation.onCancel(leave)
      const member: LongPollMember = { context, resolve, release: () => (clearTimeout(timer), stopListening()) }
      this.members.add(member)
      // the second writing thread takes tens of milliseconds to start: not while a change waits for it
      if (this.members.size === PARALLEL_FROM) parallelWrites.start()
    })
  }

  get size(): number {
    return this.members.size
  }

  private listen(): void {
    this.shape.onChange(() => this.wake(), GROUP_RECHECK_MS)
  }

  private wake(): void {
    const { shape, offset, requested } = this
    if (this.members.size === 0) return this.close()
    if (!hasNews(shape, readPosition(offset))) return this.listen()
    this.close()
    const members = [...this.members]
    this.members.clear()
    const slice = shape.invalidated ? undefined : shape.tailAfter(readPosition(offset))
    const first = members[0]
    const prepared =
      slice && first && isShareable(first.context)
        ? sharedAnswer(first.context, dataAnswer(first.context, shape, requested, slice))
        : null
    // members share their key (conditions, HEAD), so all of them can share an answer when the first can; every one is
    // written before any response is ended or timer cleared: the last one out is what counts
    const wire = prepared
      ? writePreparedToAll(
          members.map((member) => member.context.r),
          prepared
        )
      : []
    members.forEach((member, i) => {
      member.release()
      if (!prepared) return member.resolve(finishLongPoll(member.context, shape, offset, requested))
      if (wire[i]) member.context.r.endWritten()
      member.resolve(Promise.resolve())
    })
  }
}

interface LongPollMember {
  context: LogRequestContext
  resolve: (answered: Promise<void>) => void
  /** Stops the member's own timeout and cancel listener. */
  release: () => void
}

/** How often a group with no change re-registers with its shape (members time out on their own). */
const GROUP_RECHECK_MS = 60_000

const longPollGroups = new WeakMap<Shape, Map<string, LongPollGroup>>()

/** Live long-polls of `shape` held now, waiting for its next change. */
export function heldLongPolls(shape: Shape): number {
  let held = 0
  for (const group of longPollGroups.get(shape)?.values() ?? []) held += group.size
  return held
}

/** Holds a live long-poll until the shape has entries after `offset` or the long-poll timeout, in its group. */
function holdLongPoll(context: LogRequestContext, shape: Shape, offset: LogOffset, requested: string): Promise<void> {
  if (hasNews(shape, readPosition(offset)) || context.cancellation.cancelled)
    return finishLongPoll(context, shape, offset, requested)
  const groups = longPollGroups.get(shape) ?? new Map<string, LongPollGroup>()
  longPollGroups.set(shape, groups)
  const key = longPollKey(context, offset)
  let group = groups.get(key)
  if (!group) {
    const created = new LongPollGroup(shape, offset, requested, () => groups.get(key) === created && groups.delete(key))
    groups.set(key, created)
    group = created
  }
  return group.join(context)
}

/** Requests that get the same answer to the same change (conditional ones wait together but are answered alone). */
function longPollKey(context: LogRequestContext, offset: LogOffset): string {
  const { r, request } = context
  return [
    formatOffset(offset),
    request.cursor ?? '',
    r.req.headers.origin ?? '',
    context.noCache,
    r.head,
    r.req.headers['if-none-match'] ?? '',
    isShareable(context)
  ].join('\u0000')
}

/** Answers one long-poll on its own (timed out, cancelled, conditional, or its group could not share an answer). */
async function finishLongPoll(
  context: LogRequestContext,
  shape: Shape,
  offset: LogOffset,
  requested: string
): Promise<void> {
  if (shape.invalidated) return conflict(context, await replacement(context))
  const slice = await shape.readLogAfter(readPosition(offset))
  if (slice) return answer(context, dataAnswer(context, shape, requested, slice))
  const body = () => arrayBody(null, upToDateMessage(context.service.seenLsn(shape)))
  return answer(context, {
    shape,
    requested,
    body,
    offset,
    cacheControl: CACHE_CONTROL.live,
    upToDate: true,
    hasData: false,
    noChange: true
  })
}

function dataAnswer(context: LogRequestContext, shape: Shape, requested: string, slice: LogSlice): BytesAnswer {
  const atEnd = compareOffsets(slice.end, shape.lastOffset) >= 0
  const live = context.request.live
  const lsn = live ? slice.end.tx : maxBigint(context.service.seenLsn(shape), slice.end.tx)
  const body = () => (atEnd ? arrayBody(slice.lines, upToDateMessage(lsn)) : arrayBody(slice.lines))
  const cacheControl = live ? CACHE_CONTROL.live : context.catchUpCache
  return { shape, requested, body, offset: slice.end, cacheControl, upToDate: atEnd, hasData: true, noChange: false }
}

/** A catch-up answer with a log range read from disk: the range's shared bytes, then `]` or the up-to-date and `]`. */
function catchUpAnswer(
  context: LogRequestContext,
  shape: Shape,
  requested: string,
  read: { end: LogOffset; source: ChunkSource }
): ChunkAnswer {
  const atEnd = compareOffsets(read.end, shape.lastOffset) >= 0
  const suffix = Buffer.from(
    atEnd ? `,${upToDateMessage(maxBigint(context.service.seenLsn(shape), read.end.tx))}]` : ']'
  )
  return {
    shape,
    requested,
    chunk: read.source,
    suffix,
    offset: read.end,
    cacheControl: context.catchUpCache,
    upToDate: atEnd,
    hasData: true,
    noChange: false
  }
}

const maxBigint = (a: bigint, b: bigint): bigint => (a > b ? a : b)

/**
 * No answer claims up-to-date while the server's own writes fail (stalled), nor a live one while the replication
 * stream is down (waiting): 503 with retry-after instead. A catch-up answer then is current as of its snapshot.
 */
function refusedWhileBehind(context: LogRequestContext): boolean {
  const health = context.service.health()
  if (health.status === 'active' || (health.status === 'waiting' && !context.request.live)) return false
  context.r.unavailable(`The shape server is behind Postgres, please retry: ${health.message}`, 5)
  return true
}

async function answer(context: LogRequestContext, result: LogAnswer | Shape): Promise<void> {
  if (!('requested' in result)) return unavailableShape(context, result)
  if (result.upToDate && refusedWhileBehind(context)) {
    if ('chunk' in result) releaseSource(result.chunk)
    return
  }
  const { r, request } = context
  if ('body' in result && isShareable(context) && !result.noChange) return r.sendPrepared(sharedAnswer(context, result))
  const headers = answerHeaders(context, result)
  if (etagMatches(r.req.headers['if-none-match'], headers.etag)) {
    if ('chunk' in result) releaseSource(result.chunk)
    return r.send(304, headers, null)
  }
  if (!request.live)
    headers[r.names.schema] = JSON.stringify(
      schemaHeader(result.shape.definition.table, result.shape.definition.columns)
    )
  if ('chunk' in result) return r.sendChunk(200, headers, result.chunk, result.suffix)
  r.send(200, headers, result.body())
}

function answerHeaders(context: LogRequestContext, result: LogAnswer): HeaderMap & { etag: string } {
  const { names } = context.r
  const etag = `"${result.shape.handle}:${result.requested}:${formatOffset(result.offset)}${result.noChange ? `:${monotonicTag()}` : ''}"`
  const headers: HeaderMap & { etag: string } = {
    ...shapeHeaders(context, result.shape, result.offset),
    'content-type': 'application/json; charset=utf-8',
    'cache-control': context.noCache ? CACHE_CONTROL.noCache : result.cacheControl,
    etag,
    [names.hasData]: String(result.hasData)
  }
  if (result.upToDate) headers[names.upToDate] = ''
  return headers
}

/**
 * When one change wakes many identical long-polls (a CDN's miss, a thousand tabs), the answer is built once: same
 * request, same log end, same cursor and origin. Only live answers with data are shared (they are small; catch-up
 * chunks of up to 10 MiB are not kept); conditional and "no change" answers are always built anew.
 */
const isShareable = ({ request, r }: LogRequestContext): boolean =>
  request.live && r.req.headers['if-none-match'] === undefined && !r.head

function sharedAnswer(context: LogRequestContext, result: BytesAnswer): PreparedAnswer {
  const { r, request } = context
  const key = [
    result.requested,
    formatOffset(result.offset),
    request.cursor ?? '',
    r.req.headers.origin ?? '',
    context.noCache
  ].join('\u0000')
  return preparedAnswer(result.shape, key, () => {
    const body = result.body()
    return { headers: r.flatHeaders(answerHeaders(context, result), body), body }
  })
}

/** A shape that failed or was dropped while the request waited for its snapshot. */
async function unavailableShape(context: LogRequestContext, shape: Shape): Promise<void> {
  if (shape.invalidated && !shape.failure) return conflict(context, await replacement(context))
  // a where that Postgres cannot evaluate on the table's rows (division by zero, a bad cast), or a table it may not read
  if (isCallersQueryError(shape.failure))
    return context.r.invalidRequest({ [shape.failure.code === '42501' ? 'table' : 'where']: [shape.failure.message] })
  if (shape.failure instanceof ShapeTooLargeError) return tooLarge(context.r, shape.failure)
  if (shape.failure) return context.r.unavailable('Failed to create shape, please retry', 1)
  context.r.unavailable('Timed out waiting for the shape snapshot, please retry', 10, {
    [context.r.names.knownError]: 'true'
  })
}

/** 413 for a shape whose snapshot alone does not fit the disk budget, naming the limit. */
export function tooLarge(r: Responder, error: ShapeTooLargeError): void {
  r.json(413, {
    code: 'shape_too_large',
    message: `The shape was not built: ${error.message}`,
    limit: error.limitBytes
  })
}

/**
 * The shape that takes over from one dropped while a request held it: the definition is resolved again (the table
 * may have changed), and none is offered when it no longer resolves.
 */
export async function replacement(context: LogRequestContext): Promise<Shape | null> {
  try {
    return await context.service.shapeFor(await context.service.resolve(context.definition.input))
  } catch {
    return null
  }
}

/** 409 must-refetch, pointing at the shape that now serves the definition (when there is one). */
export function conflict({ r }: Pick<LogRequestContext, 'r'>, current: Shape | null): void {
  const headers: HeaderMap = {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': CACHE_CONTROL.conflict(current !== null),
    etag: `"${current?.handle ?? ''}::"`
  }
  if (current) headers[r.names.handle] = current.handle
  r.send(409, headers, mustRefetchBody)
}
