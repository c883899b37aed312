import { z } from 'zod'
import { headerName, type ProtocolHeader } from '../../../shared/protocol'
import type { ShapeSchema } from '../../../shared/shape-client/protocol-headers'
import type { CheckContext, Outcome } from '../context'
import { answeredOffset, expectAnswerFor, expectCacheControl, expectProtocolHeaders, expectRejected } from '../expect'
import type { Probe } from '../probe'
import { type Check, randomTag, sleep, syncedOrSkip } from './check'

/** Pairs of origins asked from: two foreign sites, then two loopback pages (what a local server serves by default). */
const ORIGIN_PAIRS: Array<[string, string]> = [
  ['https://a.syncscope-check.invalid', 'https://b.syncscope-check.invalid'],
  ['http://localhost:5173', 'http://127.0.0.1:5173']
]
const MUST_EXPOSE: ProtocolHeader[] = ['handle', 'offset', 'schema', 'cursor', 'up-to-date']

const listOf = (header: string | null): string[] =>
  (header ?? '')
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter(Boolean)

export const corsCheck: Check = {
  id: 'cors',
  title: 'CORS and Vary: Origin',
  async run(ctx, outcome) {
    // A URL nobody asked before (cache-buster is a protocol parameter every proxy passes on), asked from two origins:
    // two foreign sites, or, where those get no CORS, two loopback pages (at a URL of their own: a cache that ignores
    // Vary would hand them the first pair's answer).
    let params: Record<string, string> = {}
    let pair: [string, string] | null = null
    let a: Probe | null = null
    for (const [first, second] of ORIGIN_PAIRS) {
      params = { offset: '-1', 'cache-buster': randomTag() }
      a = await ctx.send({ label: `offset=-1 from Origin ${first}`, params, headers: { origin: first } })
      if (a.headers.get('access-control-allow-origin')) {
        pair = [first, second]
        break
      }
    }
    if (!pair || !a)
      return outcome.note(
        'no CORS for other origins, loopback pages included: the endpoint does not serve browsers of other origins (a policy choice)'
      )
    const [originA, originB] = pair
    const allowed = a.headers.get('access-control-allow-origin')
    const missing = MUST_EXPOSE.map((name) => headerName(ctx.brand, name)).filter(
      (name) => !listOf(a.headers.get('access-control-expose-headers')).includes(name)
    )
    if (missing.length > 0)
      outcome.add('cors.expose-missing', `access-control-expose-headers does not list ${missing.join(', ')}.`, a)
    const varyOrigin = listOf(a.headers.get('vary')).some((name) => name === 'origin' || name === '*')
    if (allowed === originA && !varyOrigin)
      outcome.add('cors.vary-missing', 'The Origin is echoed in access-control-allow-origin without `Vary: Origin`.', a)
    const b = await ctx.send({ label: `the same URL from Origin ${originB}`, params, headers: { origin: originB } })
    if (b.headers.get('access-control-allow-origin') === originA) {
      if (varyOrigin)
        outcome.add(
          'cache.vary-ignored',
          `Origin ${originB} was handed the answer for ${originA}, although the origin said \`Vary: Origin\`.`,
          a,
          b
        )
      else
        outcome.add(
          'cors.vary-missing',
          `Without \`Vary: Origin\`, a cache handed ${originB} the answer for ${originA}.`,
          a,
          b
        )
    }
    const preflight = await ctx.send({
      label: 'CORS preflight',
      method: 'OPTIONS',
      params,
      headers: { origin: originA, 'access-control-request-method': 'GET' }
    })
    if (preflight.status >= 300 || !preflight.headers.has('access-control-allow-methods'))
      outcome.add(
        'cors.preflight',
        `The preflight was answered ${preflight.status} without access-control-allow-methods.`,
        preflight
      )
  }
}

/** A column to order subsets by: the first primary-key column of the shape's schema. */
const orderColumn = (schema: ShapeSchema | null): string | null =>
  Object.entries(schema ?? {}).find(([, column]) => column.pk_index === 0)?.[0] ?? Object.keys(schema ?? {})[0] ?? null

const quote = (column: string) => `"${column.replaceAll('"', '""')}"`

const SubsetSchema = z.object({
  data: z.array(z.looseObject({ key: z.string(), value: z.record(z.string(), z.string().nullable()) })),
  metadata: z.looseObject({ xmin: z.string(), xmax: z.string(), xip_list: z.array(z.string()) })
})

function expectSubset(ctx: CheckContext, outcome: Outcome, probe: Probe, id: 'subset.post' | 'subset.get'): void {
  if (probe.status !== 200)
    return outcome.add(
      probe.status >= 500 ? 'errors.server-error' : id,
      `The subset request was answered ${probe.status}: ${probe.text.slice(0, 200)}`,
      probe
    )
  const parsed = SubsetSchema.safeParse(probe.json)
  if (!parsed.success)
    outcome.add(
      id,
      `The subset body is not {data, metadata}: ${parsed.error.issues[0]?.message ?? ''} at ${parsed.error.issues[0]?.path.join('.') ?? ''}.`,
      probe
    )
  expectProtocolHeaders(ctx, outcome, probe, 'subset')
  expectCacheControl(outcome, probe, 'subset')
}

/** Where subsets are asked (the synced shape's handle and offset) and the column they are ordered by; null after a skip. */
async function subsetTarget(
  ctx: CheckContext,
  outcome: Outcome
): Promise<{ at: Record<string, string | null>; order: string } | null> {
  const synced = await syncedOrSkip(ctx, outcome)
  if (!synced) return null
  const column = orderColumn(synced.schema)
  if (!column) {
    outcome.skip('the shape has no schema header to pick an order_by column from')
    return null
  }
  return { at: { ...synced.params, offset: synced.offset, handle: synced.handle }, order: quote(column) }
}

export const subsetsCheck: Check = {
  id: 'subsets',
  title: 'Subset snapshots (POST and GET)',
  async run(ctx, outcome) {
    const target = await subsetTarget(ctx, outcome)
    if (!target) return
    const { at, order } = target
    const body = JSON.stringify({ where: 'true', order_by: order, limit: 2 })
    const post = await ctx.send({
      label: 'POST subset',
      method: 'POST',
      params: at,
      headers: { 'content-type': 'application/json' },
      body
    })
    expectSubset(ctx, outcome, post, 'subset.post')
    const get = await ctx.send({
      label: 'GET subset (subset__*)',
      params: { ...at, subset__where: 'true', subset__order_by: order, subset__limit: '2' }
    })
    expectSubset(ctx, outcome, get, 'subset.get')
    expectRejected(
      outcome,
      await ctx.send({ label: 'subset__limit without subset__order_by', params: { ...at, subset__limit: '2' } }),
      'subset__limit without subset__order_by'
    )
  }
}

export const cacheHonouredCheck: Check = {
  id: 'cache-honoured',
  title: 'Caches in front honour cache-control',
  async run(ctx, outcome) {
    const target = await subsetTarget(ctx, outcome)
    if (!target) return
    // A `no-cache` answer asked twice, a second apart: each is a new snapshot with a random snapshot_mark, so the same
    // body again (or, without a mark, the same Date) means a cache reused it without asking the origin.
    const params = { ...target.at, subset__where: 'true', subset__order_by: target.order, subset__limit: '1' }
    const first = await ctx.send({ label: 'GET subset (no-cache)', params })
    if (first.status !== 200) return outcome.skip(`the GET subset was answered ${first.status} (see subsets)`)
    await sleep(1_100)
    const second = await ctx.send({ label: 'the same GET subset a second later', params })
    const marked = SubsetSchema.safeParse(first.json).data?.metadata.snapshot_mark !== undefined
    const date = first.headers.get('date')
    if (first.text === second.text && (marked || (date !== null && date === second.headers.get('date')))) {
      outcome.add(
        'cache.cache-control-ignored',
        `An answer marked \`cache-control: ${first.headers.get('cache-control') ?? '(none)'}\` was served again a second later, the same snapshot${marked ? ' (same snapshot_mark)' : ` (same Date: ${date})`}.`,
        first,
        second
      )
    }
  }
}

export interface PathKeyed {
  initial: Probe
  unknown: Probe
  /** The two got the same answer, or the second one another URL's: something in front answers by path alone. */
  byPath: boolean
}

/**
 * Pauses before each round of the experiment: a cache may store an answer only a moment after sending it (nginx renames
 * its temp file into the cache once the upstream's answer is complete, and answers MISS meanwhile), so one round can
 * miss a cache that answers by path alone.
 */
const ROUND_PAUSES_MS = [0, 250, 1_000]

/**
 * Two URLs nobody asked before, differing in the query alone, whose answers any sound service tells apart: `offset=-1`
 * (200) and a continuation with an unknown handle (409); asked again after a pause until a round shows a cache answering
 * by path, at most three rounds. Run once and shared by the checks that need to know whether an odd answer came from a
 * cache keyed on the path, or from the service itself.
 */
export const pathKeyed = (ctx: CheckContext): Promise<PathKeyed> =>
  ctx.memo('path-keyed', async () => {
    let round: PathKeyed | undefined
    for (const pause of ROUND_PAUSES_MS) {
      await sleep(pause)
      round = await pathKeyedRound(ctx)
      if (round.byPath) break
    }
    return round as PathKeyed
  })

async function pathKeyedRound(ctx: CheckContext): Promise<PathKeyed> {
  const initial = await ctx.send({
    label: 'offset=-1 with a cache buster',
    params: { offset: '-1', 'cache-buster': randomTag() }
  })
  const unknown = await ctx.send({
    label: 'an unknown handle with another cache buster',
    params: { offset: '0_0', handle: randomTag(), 'cache-buster': randomTag() }
  })
  const same =
    initial.status === unknown.status &&
    initial.text === unknown.text &&
    initial.headers.get('etag') === unknown.headers.get('etag')
  const answered = answeredOffset(unknown)
  return { initial, unknown, byPath: same || (answered !== undefined && answered !== '0_0') }
}

export const cacheKeyCheck: Check = {
  id: 'cache-key',
  title: 'Caches key on the whole URL',
  async run(ctx, outcome) {
    const { initial, unknown, byPath } = await pathKeyed(ctx)
    if (!expectAnswerFor(outcome, initial, '-1', unknown) || !expectAnswerFor(outcome, unknown, '0_0', initial)) return
    if (byPath)
      outcome.add(
        'cache.query-ignored',
        `offset=-1 and a continuation with an unknown handle, two URLs nobody asked before, got the very same answer (${initial.status}, same body and etag): a cache answers by path alone.`,
        initial,
        unknown
      )
  }
}

export const cachingChecks = [cacheKeyCheck, corsCheck, cacheHonouredCheck, subsetsCheck]
