import { headerName } from '../../../shared/protocol'
import { isMustRefetch, MessageArraySchema } from '../../../shared/shape-client/messages'
import {
  controlsOf,
  expectAnswerFor,
  expectCacheControl,
  expectMessages,
  expectProtocolHeaders,
  expectRejected
} from '../expect'
import { type Check, initialSync, randomTag, syncedOrSkip } from './check'

export const initialSyncCheck: Check = {
  id: 'initial-sync',
  title: 'Initial sync and chunking',
  async run(ctx, outcome) {
    const { synced, outcome: followed } = await initialSync(ctx)
    outcome.findings.push(...followed.findings)
    if (synced)
      outcome.note(
        `${synced.probes.length} requests, ${synced.messages.length} messages, up to date at ${synced.offset}`
      )
  }
}

export const offsetNowCheck: Check = {
  id: 'offset-now',
  title: 'offset=now',
  async run(ctx, outcome) {
    const probe = await ctx.send({ label: 'offset=now', params: { offset: 'now' } })
    if (probe.status !== 200) return outcome.add('now.unsupported', `offset=now was answered ${probe.status}.`, probe)
    if (!expectAnswerFor(outcome, probe, 'now') || !expectProtocolHeaders(ctx, outcome, probe, 'log')) return
    const messages = expectMessages(outcome, probe)
    if (messages && (messages.length !== 1 || controlsOf(messages)[0] !== 'up-to-date')) {
      outcome.add(
        'now.unsupported',
        `offset=now answered ${messages.length} messages instead of one up-to-date.`,
        probe
      )
    }
  }
}

export const etagCheck: Check = {
  id: 'etag',
  title: 'etag and If-None-Match → 304',
  async run(ctx, outcome) {
    const synced = await syncedOrSkip(ctx, outcome)
    if (!synced) return
    const [first] = synced.probes
    const etag = first?.headers.get('etag')
    if (!first || !etag)
      return outcome.add('etag.missing', 'The offset=-1 answer has no etag.', ...(first ? [first] : []))
    const again = await ctx.send({
      label: 'offset=-1 with If-None-Match',
      params: { ...synced.params, offset: '-1' },
      headers: { 'if-none-match': etag }
    })
    if (again.status !== 304)
      outcome.add('etag.not-honoured', `If-None-Match: ${etag} was answered ${again.status}, not 304.`, first, again)
    else if (again.text !== '') outcome.add('etag.not-honoured', 'The 304 has a body.', again)
  }
}

export const handlesCheck: Check = {
  id: 'handles',
  title: 'Unknown handle → 409 must-refetch',
  async run(ctx, outcome) {
    const bogus = randomTag()
    const probe = await ctx.send({
      label: 'continuation with an unknown handle',
      params: { offset: '0_0', handle: bogus }
    })
    if (probe.status !== 409)
      return outcome.add(
        probe.status >= 500 ? 'errors.server-error' : 'handles.no-conflict',
        `offset=0_0&handle=${bogus} was answered ${probe.status}, not 409.`,
        probe
      )
    const parsed = MessageArraySchema.safeParse(probe.json)
    const mustRefetch = parsed.success && parsed.data.length > 0 && parsed.data.every(isMustRefetch)
    if (!mustRefetch) outcome.add('handles.conflict-body', `The 409 body is ${probe.text.slice(0, 200)}.`, probe)
    const handle = ctx.header(probe, 'handle')
    if (!handle)
      outcome.add('handles.conflict-no-handle', `The 409 has no \`${headerName(ctx.brand, 'handle')}\`.`, probe)
    expectCacheControl(outcome, probe, 'conflict')
  }
}

export const paramsCheck: Check = {
  id: 'params',
  title: 'Parameter validation and error bodies',
  async run(ctx, outcome) {
    const invalid: Array<[string, Record<string, string | null>]> = [
      ['no offset', { offset: null }],
      ['offset=bababa', { offset: 'bababa' }],
      ['live=true with offset=-1', { offset: '-1', live: 'true' }],
      ['offset=0_0 without a handle', { offset: '0_0' }]
    ]
    if (ctx.options.table) {
      invalid.push(
        ['a where with a syntax error', { offset: '-1', where: '1 x 1' }],
        ['an unknown column', { offset: '-1', columns: 'syncscope_check_no_such_column' }]
      )
    } else outcome.note('where/columns validation not tried: the endpoint fixes the shape (no --table)')
    for (const [what, params] of invalid) expectRejected(outcome, await ctx.send({ label: what, params }), what)
  }
}

export const syncChecks = [initialSyncCheck, offsetNowCheck, etagCheck, handlesCheck, paramsCheck]
