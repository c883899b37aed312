import { parseCacheControl } from '../../shared/shape-client/cache'
import { MessageArraySchema, type Message, isControlMessage } from '../../shared/shape-client/messages'
import { CONTROL, HEADER_BRANDS, headerName, type ProtocolHeader } from '../../shared/protocol'
import type { CheckContext, Outcome } from './context'
import type { OpenStream, Probe } from './probe'

/** The checks' shared expectations of single responses: protocol headers, bodies, cache-control per class. */

type HeaderKind = 'log' | 'live' | 'subset'

/** The protocol headers a 200 of this kind must carry; reports the missing ones (or a response of the other brand). */
export function expectProtocolHeaders(
  ctx: CheckContext,
  outcome: Outcome,
  probe: Probe | OpenStream,
  kind: HeaderKind
): boolean {
  const needed: ProtocolHeader[] = ['handle', 'offset', kind === 'live' ? 'cursor' : 'schema']
  const response = 'response' in probe ? probe.response : probe
  const missing = needed.filter((name) => !response.headers.has(headerName(ctx.brand, name)))
  if (missing.length === 0) return true
  const other = HEADER_BRANDS.find((brand) => brand !== ctx.brand && response.headers.has(headerName(brand, 'offset')))
  if (other) {
    outcome.add(
      'headers.brand-mismatch',
      `The response names its protocol headers \`${other}-*\`, not \`${ctx.brand}-*\`: run with --header-brand ${other}, or serve the brand your client reads.`,
      probe
    )
  } else if (missing.includes('cursor') && missing.length === 1) {
    outcome.add('cursor.missing', `The live answer has no \`${headerName(ctx.brand, 'cursor')}\` header.`, probe)
  } else {
    outcome.add(
      'headers.missing',
      `A ${response.status} ${kind === 'live' ? 'live answer' : 'response'} lacks ${missing.map((name) => `\`${headerName(ctx.brand, name)}\``).join(', ')}.`,
      probe
    )
  }
  return false
}

/** The messages of a shape log body, or null (reported) when it is not a JSON array of messages. */
export function expectMessages(outcome: Outcome, probe: Probe): Message[] | null {
  const parsed = MessageArraySchema.safeParse(probe.json)
  if (parsed.success) return parsed.data
  if (!Array.isArray(probe.json))
    outcome.add(
      'initial.body',
      `The body is not a JSON array (content-type ${probe.headers.get('content-type') ?? 'none'}).`,
      probe
    )
  else
    outcome.add(
      'sync.bad-message',
      `A message does not have the protocol's form: ${parsed.error.issues[0]?.message ?? ''} at ${parsed.error.issues[0]?.path.join('.') ?? ''}.`,
      probe
    )
  return null
}

/**
 * The answer names the request it answers: its etag is `"<handle>:<requested offset>:<response offset>…"` (the
 * reference's and ours). An etag naming another requested offset is a cache's answer to a different query string.
 */
export function expectAnswerFor(outcome: Outcome, probe: Probe, offset: string, ...earlier: Probe[]): boolean {
  const requested = answeredOffset(probe)
  if (requested === undefined || requested === offset) return true
  outcome.add(
    'cache.query-ignored',
    `Asked for offset=${offset}, the answer's etag (${probe.headers.get('etag')}) says it answers offset=${requested}: a cache served the answer of another URL.`,
    ...earlier,
    probe
  )
  return false
}

/** The requested offset the answer's etag names (undefined without such an etag). */
export const answeredOffset = (probe: Probe): string | undefined =>
  /^(?:W\/)?"[^":]+:([^":]+):/.exec(probe.headers.get('etag') ?? '')?.[1]

export const controlsOf = (messages: readonly Message[]): string[] =>
  messages.flatMap((message) => (isControlMessage(message) ? [message.headers.control] : []))
export const endsUpToDate = (messages: readonly Message[]): boolean => controlsOf(messages).at(-1) === CONTROL.upToDate

function directives(probe: { headers: Headers }) {
  const list = parseCacheControl(probe.headers.get('cache-control'))
  const map = new Map(list.map(({ name, value }) => [name, value]))
  const seconds = (name: string): number | null => {
    const value = Number(map.get(name))
    return map.has(name) && Number.isFinite(value) ? value : null
  }
  return { has: (name: string) => map.has(name), seconds, header: probe.headers.get('cache-control') ?? '(none)' }
}

/** Whether a shared cache may serve this response without asking the origin. */
function sharedFresh(probe: { headers: Headers }): boolean {
  const d = directives(probe)
  if (d.has('no-store') || d.has('no-cache') || d.has('private')) return false
  const ttl = d.seconds('s-maxage') ?? d.seconds('max-age')
  return ttl === null ? !probe.headers.has('cache-control') : ttl > 0
}

export type ResponseClass = 'initial' | 'error' | 'conflict' | 'live' | 'sse' | 'subset'

/** cache-control of one response class, as docs/protocol.md lists them. */
export function expectCacheControl(outcome: Outcome, probe: Probe | OpenStream, kind: ResponseClass): void {
  const response = 'response' in probe ? probe.response : probe
  const d = directives(response)
  if (kind === 'initial' && !(d.has('public') || d.seconds('s-maxage') || d.seconds('max-age'))) {
    outcome.add(
      'cache.initial',
      `The offset=-1 answer says \`cache-control: ${d.header}\`: no shared cache will serve initial syncs.`,
      probe
    )
  }
  if (kind === 'error' && sharedFresh(response)) {
    outcome.add(
      'cache.error-cacheable',
      `A ${response.status} says \`cache-control: ${d.header}\` instead of \`no-store\`.`,
      probe
    )
  }
  if (
    kind === 'conflict' &&
    ((d.seconds('max-age') ?? 0) > 60 ||
      (d.seconds('s-maxage') ?? 0) > 60 ||
      (sharedFresh(response) && !d.has('must-revalidate')))
  ) {
    outcome.add('cache.conflict-cacheable', `The 409 says \`cache-control: ${d.header}\`.`, probe)
  }
  if (kind === 'live') {
    const fresh = (d.seconds('s-maxage') ?? d.seconds('max-age') ?? 0) + (d.seconds('stale-while-revalidate') ?? 0)
    if (fresh > 20)
      outcome.add(
        'cache.live-too-long',
        `A live answer says \`cache-control: ${d.header}\`: caches may reuse it for ${fresh} s.`,
        probe
      )
  }
  if (kind === 'sse' && d.seconds('max-age') === null)
    outcome.add('cache.sse-max-age', `The SSE response says \`cache-control: ${d.header}\`.`, probe)
  if (kind === 'subset' && sharedFresh(response))
    outcome.add('cache.subset-cacheable', `The subset answer says \`cache-control: ${d.header}\`.`, probe)
}

/** An answer to an invalid request: 400 (not 2xx, not 5xx) with a JSON body and no-store. */
export function expectRejected(outcome: Outcome, probe: Probe, what: string): void {
  if (probe.status >= 500)
    outcome.add(
      'errors.server-error',
      `${what}: answered ${probe.status}, a server failure, for the caller's mistake.`,
      probe
    )
  else if (probe.status < 400 || probe.status === 409)
    outcome.add('params.not-validated', `${what}: answered ${probe.status} instead of 400.`, probe)
  else {
    if (probe.json === undefined || probe.json === null || typeof probe.json !== 'object')
      outcome.add(
        'errors.not-json',
        `${what}: the ${probe.status} body is not JSON: ${probe.text.slice(0, 120)}`,
        probe
      )
    expectCacheControl(outcome, probe, 'error')
  }
}
