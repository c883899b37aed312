import { headerName } from '../../../shared/protocol'
import { isChangeMessage, isMustRefetch, MessageArraySchema } from '../../../shared/shape-client/messages'
import { compareOffsets } from '../../../shared/shape-client/offsets'
import type { SseFrame } from '../../../shared/shape-client/sse'
import type { CheckContext, Outcome } from '../context'
import { controlsOf, endsUpToDate, expectCacheControl, expectMessages, expectProtocolHeaders } from '../expect'
import type { Synced } from '../follow'
import { ProbeFailure, type OpenStream, type Probe } from '../probe'
import { type Check, ownShape, randomTag, sleep, syncedOrSkip } from './check'

/** The official client abandons a long-poll after this long. */
const CLIENT_WATCHDOG_MS = 45_000
/** The spec's keep-alive interval, plus slack. */
const KEEP_ALIVE_WAIT_MS = 25_000
/** How long a change may take from commit to the client. */
const DELIVERY_MS = 5_000
/** A cursor past any time window: the server must answer with a larger one. */
const FUTURE_CURSOR = '99999999999'

const liveParams = (synced: Synced, extra: Record<string, string> = {}) => ({
  ...synced.params,
  offset: synced.offset,
  handle: synced.handle,
  live: 'true',
  cursor: FUTURE_CURSOR,
  ...extra
})

/** The shape the live checks follow: the checker's own table when it may write (a shape of its own per `where`). */
async function liveShape(ctx: CheckContext, outcome: Outcome, where: string | null): Promise<Synced | null> {
  if (!ctx.writeTable) return syncedOrSkip(ctx, outcome)
  const { synced, outcome: followed } = await ownShape(ctx, where)
  const [first] = followed.findings
  if (!synced)
    outcome.skip(
      `the checker's table ${ctx.writeTable.name} could not be synced through the endpoint (${first?.id}: ${first?.message}); is --write-sql the database the service follows?`
    )
  return synced
}

/** A live answer's cursor is there and past the one sent. */
function expectCursor(ctx: CheckContext, outcome: Outcome, probe: Probe | OpenStream): void {
  const response = 'response' in probe ? probe.response : probe
  const cursor = response.headers.get(headerName(ctx.brand, 'cursor'))
  if (cursor === null) return
  if (!/^\d+$/.test(cursor) || BigInt(cursor) <= BigInt(FUTURE_CURSOR))
    outcome.add(
      'cursor.not-advanced',
      `Sent cursor=${FUTURE_CURSOR}, the answer's cursor is ${cursor}: the next live URL repeats, so a cache can hand the client an old answer.`,
      probe
    )
}

/** Commits a row into the checker's table and returns its key as the shape log spells it. */
async function commitRow(ctx: CheckContext, label: string): Promise<string> {
  const id = await (ctx.writeTable as NonNullable<CheckContext['writeTable']>).insert(label)
  return `/"${id}"`
}

async function timeoutAnswer(ctx: CheckContext, outcome: Outcome, synced: Synced): Promise<void> {
  const waitMs = Math.min(CLIENT_WATCHDOG_MS, ctx.maxWaitMs)
  let probe: Probe
  try {
    probe = await ctx.send({ label: 'live long-poll with nothing new', params: liveParams(synced), timeoutMs: waitMs })
  } catch (error) {
    if (!(error instanceof ProbeFailure && error.timedOut)) throw error
    if (waitMs >= CLIENT_WATCHDOG_MS)
      outcome.add('live.never-answers', `No answer within ${waitMs / 1000} s.`, error.evidence)
    else outcome.note(`the long-poll was not answered within --max-wait ${waitMs / 1000} s; not judged`)
    return
  }
  if (probe.status !== 200)
    return outcome.add(
      probe.status >= 500 ? 'errors.server-error' : 'live.timeout-answer',
      `The long-poll was answered ${probe.status}.`,
      probe
    )
  expectProtocolHeaders(ctx, outcome, probe, 'live')
  expectCacheControl(outcome, probe, 'live')
  expectCursor(ctx, outcome, probe)
  const messages = expectMessages(outcome, probe)
  if (!messages) return
  if (messages.some(isChangeMessage))
    return outcome.note('the long-poll got changes someone else made; the timeout answer was not seen')
  if (controlsOf(messages).join() !== 'up-to-date' || ctx.header(probe, 'offset') !== synced.offset) {
    outcome.add(
      'live.timeout-answer',
      `The timeout answer has messages [${controlsOf(messages).join(', ')}] and offset ${ctx.header(probe, 'offset')} (asked ${synced.offset}).`,
      probe
    )
  }
  if (probe.headMs < 1_000)
    outcome.add(
      'live.not-held',
      `A live request with nothing new was answered after ${Math.round(probe.headMs)} ms instead of being held.`,
      probe
    )
  else outcome.note(`held ${(probe.headMs / 1000).toFixed(1)} s`)
}

async function changeDelivered(ctx: CheckContext, outcome: Outcome, synced: Synced): Promise<void> {
  const pending = ctx.send({
    label: 'live long-poll while a row is committed',
    params: liveParams(synced),
    timeoutMs: DELIVERY_MS + 5_000
  })
  let key: string
  try {
    await sleep(300)
    key = await commitRow(ctx, 'long-poll')
  } catch (error) {
    // the check ends here (see runOne); the long-poll still in flight is left to end on its own
    pending.catch(() => undefined)
    throw error
  }
  let probe: Probe
  try {
    probe = await pending
  } catch (error) {
    if (!(error instanceof ProbeFailure && error.timedOut)) throw error
    return outcome.add(
      'live.change-not-delivered',
      `The long-poll was not answered within ${(DELIVERY_MS + 5_000) / 1000} s of the commit.`,
      error.evidence
    )
  }
  if (probe.status !== 200)
    return outcome.add('live.change-not-delivered', `The long-poll was answered ${probe.status}.`, probe)
  expectProtocolHeaders(ctx, outcome, probe, 'live')
  expectCursor(ctx, outcome, probe)
  const messages = expectMessages(outcome, probe) ?? []
  const delivered = messages.some((message) => isChangeMessage(message) && message.key.endsWith(key))
  if (!delivered || !endsUpToDate(messages))
    outcome.add(
      'live.change-not-delivered',
      delivered
        ? 'The answer holding the change does not end with up-to-date.'
        : 'The committed row is not in the answer.',
      probe
    )
  const offset = ctx.header(probe, 'offset')
  if (offset && compareOffsets(offset, synced.offset) <= 0)
    outcome.add('sync.no-progress', `The answer with a change keeps offset ${offset}.`, probe)
}

export const longPollCheck: Check = {
  id: 'long-poll',
  title: 'Live long-poll: held, timeout answer, cursor, changes',
  async run(ctx, outcome) {
    // With writes: a shape that never matches a row waits for the timeout undisturbed; another sees only this check's rows.
    const quiet = await liveShape(ctx, outcome, ctx.writeTable ? 'id < 0' : null)
    if (!quiet) return
    const busy = ctx.writeTable ? await liveShape(ctx, outcome, "label = 'long-poll'") : null
    await Promise.all([
      timeoutAnswer(ctx, outcome, quiet),
      busy ? changeDelivered(ctx, outcome, busy) : Promise.resolve()
    ])
    if (!busy) outcome.note('change delivery not tried: no --write-sql')
  }
}

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
async function sseDelivery(ctx: CheckContext, outcome: Outcome): Promise<void> {
  const synced = await liveShape(ctx, outcome, "label = 'sse'")
  if (!synced) return
  const committed: { key: string | null } = { key: null }
  const stream = await openSse(
    ctx,
    outcome,
    synced,
    'SSE while a row is committed',
    async () => (committed.key = await commitRow(ctx, 'sse'))
  )
  if (!stream) return
  try {
    expectStreamHeaders(ctx, outcome, stream)
    const hasKey = (frame: SseFrame) =>
      isData(frame) && committed.key !== null && keyOf(frame.data)?.endsWith(committed.key) === true
    if (await stream.waitFor(hasKey, DELIVERY_MS)) return
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
  } finally {
    stream.close()
  }
}

/** An idle stream stays open and sends keep-alives as they are written. */
async function sseKeepAlive(ctx: CheckContext, outcome: Outcome): Promise<void> {
  const synced = await liveShape(ctx, outcome, ctx.writeTable ? 'id < 0' : null)
  if (!synced) return
  const stream = await openSse(ctx, outcome, synced, 'SSE with nothing new')
  if (!stream) return
  try {
    expectStreamHeaders(ctx, outcome, stream)
    const wait = Math.min(KEEP_ALIVE_WAIT_MS, ctx.maxWaitMs)
    if (await stream.waitFor(isComment, wait)) return
    if (arrivedAtEnd(stream, () => true))
      outcome.add('sse.buffered', 'Every frame arrived together with the end of the stream.', stream)
    else if (stream.endMs !== null)
      outcome.note(`the idle stream ended after ${(stream.endMs / 1000).toFixed(1)} s before any keep-alive`)
    else if (wait < KEEP_ALIVE_WAIT_MS) outcome.note(`no keep-alive within --max-wait ${wait / 1000} s; not judged`)
    else if (stream.raw === '')
      outcome.add('sse.buffered', `Nothing arrived on the stream in ${wait / 1000} s, not even a keep-alive.`, stream)
    else outcome.add('sse.no-keep-alive', `No keep-alive within ${wait / 1000} s.`, stream)
  } finally {
    stream.close()
  }
}

export const sseCheck: Check = {
  id: 'sse',
  title: 'SSE: streamed, not compressed, keep-alives',
  async run(ctx, outcome) {
    await Promise.all([sseKeepAlive(ctx, outcome), ctx.writeTable ? sseDelivery(ctx, outcome) : Promise.resolve()])
    if (!ctx.writeTable) outcome.note('change delivery not tried: no --write-sql')
  }
}

export const sseLifetimeCheck: Check = {
  id: 'sse-lifetime',
  title: 'SSE stream ends before its max-age',
  async run(ctx, outcome) {
    const synced = await liveShape(ctx, outcome, ctx.writeTable ? 'id < 0' : null)
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
      stream.close()
    }
  }
}

export const mustRefetchCheck: Check = {
  id: 'must-refetch',
  title: 'DELETE → 409 must-refetch → new handle',
  needs: ['writes'],
  async run(ctx, outcome) {
    const synced = await liveShape(ctx, outcome, 'id > 0')
    if (!synced) return
    const shape = synced.params
    const deleted = await ctx.send({
      label: 'DELETE the shape',
      method: 'DELETE',
      params: { ...shape, handle: synced.handle }
    })
    if (deleted.status === 405) return outcome.skip('the endpoint does not allow DELETE (405)')
    if (deleted.status >= 300)
      return outcome.add(
        'refetch.delete-refused',
        `DELETE was answered ${deleted.status}: ${deleted.text.slice(0, 200)}`,
        deleted
      )
    const after = await ctx
      .send({ label: 'the old handle after DELETE', params: { ...shape, ...liveParams(synced) }, timeoutMs: 15_000 })
      .catch((error: unknown) => {
        if (error instanceof ProbeFailure && error.timedOut) return error
        throw error
      })
    if (after instanceof ProbeFailure)
      return outcome.add(
        'refetch.not-invalidated',
        'The old handle was not answered 409 within 15 s of the DELETE.',
        deleted,
        after.evidence
      )
    const body = MessageArraySchema.safeParse(after.json)
    if (after.status !== 409 || !body.success || !body.data.every(isMustRefetch)) {
      return outcome.add(
        'refetch.not-invalidated',
        `After DELETE the old handle was answered ${after.status}: ${after.text.slice(0, 200)}`,
        deleted,
        after
      )
    }
    if (ctx.header(after, 'handle') === synced.handle)
      outcome.add('refetch.same-handle', 'The 409 points back at the deleted handle.', deleted, after)
    const fresh = await ctx.send({
      label: 'offset=-1 with a cache buster after the 409',
      params: { ...shape, offset: '-1', 'cache-buster': randomTag() }
    })
    if (ctx.header(fresh, 'handle') === synced.handle)
      outcome.add('refetch.same-handle', 'A fresh offset=-1 still gets the deleted handle.', deleted, fresh)
  }
}

export const liveChecks = [longPollCheck, sseCheck, sseLifetimeCheck, mustRefetchCheck]
