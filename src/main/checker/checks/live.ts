import { isChangeMessage, isMustRefetch, MessageArraySchema } from '../../../shared/shape-client/messages'
import { compareOffsets } from '../../../shared/shape-client/offsets'
import type { CheckContext, Outcome } from '../context'
import { controlsOf, endsUpToDate, expectCacheControl, expectMessages, expectProtocolHeaders } from '../expect'
import type { Synced } from '../follow'
import { ProbeFailure, type Probe } from '../probe'
import { type Check, randomTag, sleep } from './check'
import { DELIVERY_MS, commitRow, expectCursor, liveParams, liveShape, quietShape } from './live-shape'

/** The official client abandons a long-poll after this long. */
const CLIENT_WATCHDOG_MS = 45_000

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
    const quiet = await quietShape(ctx, outcome)
    if (!quiet) return
    const busy = ctx.writeTable ? await liveShape(ctx, outcome, "label = 'long-poll'") : null
    await Promise.all([
      timeoutAnswer(ctx, outcome, quiet),
      busy ? changeDelivered(ctx, outcome, busy) : Promise.resolve()
    ])
    if (!busy) outcome.note('change delivery not tried: no --write-sql')
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
