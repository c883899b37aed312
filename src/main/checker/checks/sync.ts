import { headerName } from '../../../shared/protocol'
import { isChangeMessage, isMustRefetch, MessageArraySchema } from '../../../shared/shape-client/messages'
import type { Outcome } from '../context'
import {
  answeredOffset,
  controlsOf,
  endsUpToDate,
  expectAnswerFor,
  expectCacheControl,
  expectMessages,
  expectProtocolHeaders,
  expectRejected
} from '../expect'
import type { Probe } from '../probe'
import { pathKeyed } from './caching'
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
    const answered = answeredOffset(probe)
    const changes = MessageArraySchema.safeParse(probe.json).data?.filter(isChangeMessage).length ?? 0
    // An odd answer from a cache that keys on the path is that cache's fault, not the service's: cache-key tells.
    if (probe.status !== 200 || changes > 0 || (answered !== undefined && answered !== 'now')) {
      const experiment = await pathKeyed(ctx)
      if (experiment.byPath)
        return outcome.add(
          'cache.query-ignored',
          `offset=now was answered ${probe.status}${answered ? ` with the etag of offset=${answered}` : ''}, and a cache answers this path without its query string (see cache-key).`,
          probe,
          experiment.initial,
          experiment.unknown
        )
    }
    if (probe.status !== 200) return outcome.add('now.unsupported', `offset=now was answered ${probe.status}.`, probe)
    if (answered === '-1' || (answered === undefined && changes > 0)) return wholeLog(outcome, probe, answered)
    if (!expectAnswerFor(outcome, probe, 'now') || !expectProtocolHeaders(ctx, outcome, probe, 'log')) return
    const messages = expectMessages(outcome, probe)
    if (!messages) return
    if (!endsUpToDate(messages))
      outcome.add(
        'sync.up-to-date-missing',
        `offset=now was answered [${controlsOf(messages).join(', ')}] without up-to-date: a client asking from now never learns it is caught up.`,
        probe
      )
    else if (messages.length !== 1)
      outcome.add(
        'now.unsupported',
        `offset=now answered ${messages.length} messages instead of one up-to-date.`,
        probe
      )
  }
}

/** offset=now answered with the log from its start: the service takes `now` for `-1`. */
function wholeLog(outcome: Outcome, probe: Probe, answered: string | undefined): void {
  const messages = MessageArraySchema.safeParse(probe.json).data ?? []
  const changes = messages.filter(isChangeMessage).length
  outcome.add(
    'now.ignored',
    answered === '-1'
      ? `offset=now was answered as offset=-1 (etag ${probe.headers.get('etag')}): ${changes} rows from the start of the log instead of only up-to-date and the latest offset; a client asking from now gets the whole shape.`
      : `offset=now was answered with ${changes} changes from the log instead of only up-to-date and the latest offset.`,
    probe
  )
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
