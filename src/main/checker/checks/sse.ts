import type { Evidence } from '../../../shared/findings'
import type { SseFrame } from '../../../shared/shape-client/sse'
import type { CheckContext, Outcome } from '../context'
import { expectCacheControl, expectProtocolHeaders } from '../expect'
import type { Synced } from '../follow'
import { ProbeFailure, type OpenStream } from '../probe'
import { type Check, sleep } from './check'
import { DELIVERY_MS, commitRow, expectCursor, liveParams, liveShape, quietShape } from './live-shape'

/** The spec's keep-alive interval, plus slack. */
const KEEP_ALIVE_WAIT_MS = 25_000

const isData = (frame: SseFrame): frame is Extract<SseFrame, { kind: 'data' }> => frame.kind === 'data'

function keyOf(data: string): string | undefined {
  try {
    const message = JSON.parse(data) as { key?: unknown }
    return typeof message.key === 'string' ? message.key : undefined
  } catch {
    return undefined
  }
}
const isComment = (frame: SseFrame) => frame.kind === 'comment'

/** Frames that arrived only when the stream ended (all within 100 ms of its end) were held back by a buffer. */
function arrivedAtEnd(stream: OpenStream, test: (frame: SseFrame) => boolean): boolean {
  const end = stream.endMs
  const frames = stream.frames.filter(({ frame }) => test(frame))
  return end !== null && frames.length > 0 && frames.every(({ atMs }) => end - atMs < 100)
}

/** The longest an SSE response head may take: the server sends it at once when it has nothing to send. */
const SSE_HEAD_MS = DELIVERY_MS + 1_000

/**
 * Opens an SSE request and, 300 ms later, runs `meanwhile` (a commit); a response head that does not arrive in time
 * is a proxy holding the stream back.
 */
async function openSse(
  ctx: CheckContext,
  outcome: Outcome,
  synced: Synced,
  label: string,
  meanwhile: () => Promise<unknown> = async () => {}
): Promise<OpenStream | null> {
  const opening = ctx.open({
    label,
    params: liveParams(synced, { live_sse: 'true' }),
    headers: { accept: 'text/event-stream' },
    timeoutMs: SSE_HEAD_MS
  })
  const during = sleep(300).then(meanwhile)
  let stream: OpenStream
  try {
    stream = await opening
  } catch (error) {
    await during.catch(() => undefined)
    if (!(error instanceof ProbeFailure && error.timedOut)) throw error
    outcome.add(
      'sse.buffered',
      `The SSE response head did not arrive within ${SSE_HEAD_MS / 1000} s (${error.message}): something holds the stream back.`,
      error.evidence
    )
    return null
  }
  try {
    await during
  } catch (error) {
    stream.close()
    throw error
  }
  const type = stream.response.headers.get('content-type') ?? ''
  if (stream.response.status !== 200 || !type.startsWith('text/event-stream')) {
    stream.close()
    outcome.add(
      stream.response.status >= 500 ? 'errors.server-error' : 'sse.unsupported',
      `live_sse=true was answered ${stream.response.status} ${type}.`,
      stream
    )
    return null
  }
  return stream
}

/** Closes a stream the check is done with; one that sent more than the checker reads is named for it. */
function finish(outcome: Outcome, stream: OpenStream): void {
  stream.close()
  if (stream.tooLarge)
    outcome.add('body.too-large', `The answer to "${stream.evidence().label}": ${stream.failure}.`, stream)
}

/** The stream's own headers: not compressed, protocol headers, cache-control, cursor. */
function expectStreamHeaders(ctx: CheckContext, outcome: Outcome, stream: OpenStream): void {
  const encoding = stream.response.headers.get('content-encoding')
  if (encoding && encoding !== 'identity')
    outcome.add('sse.compressed', `The event stream is sent with content-encoding: ${encoding}.`, stream)
  expectProtocolHeaders(ctx, outcome, stream, 'live')
  expectCacheControl(outcome, stream, 'sse')
  expectCursor(ctx, outcome, stream)
}

/** A row committed while an SSE request opens reaches the client at once (with writes). */
/**
 * A row committed while an SSE request opens reaches the client at once (with writes). Returns when the change
 * arrived (ms after the request) if it came in time, null if not.
 */
async function sseDelivery(ctx: CheckContext, outcome: Outcome): Promise<number | null> {
  const synced = await liveShape(ctx, outcome, "label = 'sse'")
  if (!synced) return null
  const committed: { key: string | null } = { key: null }
  const stream = await openSse(
    ctx,
    outcome,
    synced,
    'SSE while a row is committed',
    async () => (committed.key = await commitRow(ctx, 'sse'))
  )
  if (!stream) return null
  try {
    expectStreamHeaders(ctx, outcome, stream)
    const hasKey = (frame: SseFrame) =>
      isData(frame) && committed.key !== null && keyOf(frame.data)?.endsWith(committed.key) === true
    if (await stream.waitFor(hasKey, DELIVERY_MS)) return stream.frames.find(({ frame }) => hasKey(frame))?.atMs ?? null
    const ended = await stream.waitForEnd(Math.max(0, ctx.maxWaitMs - DELIVERY_MS))
    const late = stream.frames.find(({ frame }) => hasKey(frame))
    if (late)
      outcome.add(
        'sse.buffered',
        `The change reached the client ${(late.atMs / 1000).toFixed(1)} s after the request${ended ? ', together with the end of the stream' : ''}: something holds the frames back.`,
        stream
      )
    else if (ended && stream.raw === '')
      outcome.add('sse.buffered', 'The stream ended without delivering the change or anything else.', stream)
    else
      outcome.add(
        'live.change-not-delivered',
        `The committed row did not arrive within ${DELIVERY_MS / 1000} s.`,
        stream
      )
    return null
  } finally {
    finish(outcome, stream)
  }
}

/**
 * An idle stream stays open and sends keep-alives as they are written. A stream on which nothing at all arrived in the
 * whole wait is returned (its evidence) for the sse check to judge beside the delivery of a change.
 */
async function sseKeepAlive(ctx: CheckContext, outcome: Outcome): Promise<Evidence | null> {
  const synced = await quietShape(ctx, outcome)
  if (!synced) return null
  const stream = await openSse(ctx, outcome, synced, 'SSE with nothing new')
  if (!stream) return null
  try {
    expectStreamHeaders(ctx, outcome, stream)
    const wait = Math.min(KEEP_ALIVE_WAIT_MS, ctx.maxWaitMs)
    if (await stream.waitFor(isComment, wait)) return null
    if (arrivedAtEnd(stream, () => true))
      outcome.add('sse.buffered', 'Every frame arrived together with the end of the stream.', stream)
    else if (stream.endMs !== null)
      outcome.note(`the idle stream ended after ${(stream.endMs / 1000).toFixed(1)} s before any keep-alive`)
    else if (wait < KEEP_ALIVE_WAIT_MS) outcome.note(`no keep-alive within --max-wait ${wait / 1000} s; not judged`)
    else if (stream.raw === '') return stream.evidence()
    else outcome.add('sse.no-keep-alive', `No keep-alive within ${wait / 1000} s.`, stream)
    return null
  } finally {
    finish(outcome, stream)
  }
}

/**
 * Nothing, not even a keep-alive, arrived on an idle stream for the whole wait. Either something holds the stream
 * back, or it lets frames through and drops the comments: a change delivered at once on another stream tells which.
 * `delivered`: when the change arrived (ms after its request), null when it did not in time, undefined when not tried.
 */
function judgeSilence(outcome: Outcome, silent: Evidence, delivered: number | null | undefined): void {
  const wait = `${KEEP_ALIVE_WAIT_MS / 1000} s`
  if (typeof delivered === 'number')
    outcome.add(
      'sse.no-keep-alive',
      `No keep-alive within ${wait}, while the change arrived ${(delivered / 1000).toFixed(1)} s after its request: the stream is not held back, its comments are dropped on the way.`,
      silent
    )
  else if (delivered === undefined)
    outcome.add(
      'sse.no-keep-alive',
      `Nothing arrived on the idle stream in ${wait}, not even a keep-alive: its comments are dropped on the way, or the whole stream is held back (with --write-sql, a change committed meanwhile tells which).`,
      silent
    )
  else outcome.add('sse.buffered', `Nothing arrived on the stream in ${wait}, not even a keep-alive.`, silent)
}

export const sseCheck: Check = {
  id: 'sse',
  title: 'SSE: streamed, not compressed, keep-alives',
  async run(ctx, outcome) {
    const [silent, delivered] = await Promise.all([
      sseKeepAlive(ctx, outcome),
      ctx.writeTable ? sseDelivery(ctx, outcome) : Promise.resolve(undefined)
    ])
    if (silent) judgeSilence(outcome, silent, delivered)
    if (!ctx.writeTable) outcome.note('change delivery not tried: no --write-sql')
  }
}

export const sseLifetimeCheck: Check = {
  id: 'sse-lifetime',
  title: 'SSE stream ends before its max-age',
  async run(ctx, outcome) {
    const synced = await quietShape(ctx, outcome)
    if (!synced) return
    const stream = await openSse(ctx, outcome, synced, 'SSE left open until it ends')
    if (!stream) return
    try {
      const maxAge = Number(/max-age=(\d+)/.exec(stream.response.headers.get('cache-control') ?? '')?.[1])
      if (!Number.isFinite(maxAge)) return outcome.skip('the stream has no max-age (see sse)')
      const needed = maxAge * 1000 + 2_000
      if (needed > ctx.maxWaitMs)
        return outcome.skip(
          `needs up to ${needed / 1000} s (max-age ${maxAge} s); --max-wait is ${ctx.maxWaitMs / 1000} s`
        )
      if (!(await stream.waitForEnd(needed - stream.elapsed())))
        outcome.add(
          'sse.outlives-max-age',
          `The stream is still open ${Math.round(stream.elapsed() / 1000)} s after it began, past its max-age of ${maxAge} s.`,
          stream
        )
      else outcome.note(`ended after ${((stream.endMs ?? 0) / 1000).toFixed(1)} s (max-age ${maxAge} s)`)
    } finally {
      finish(outcome, stream)
    }
  }
}
