import type { Evidence, Finding } from '../../shared/findings'
import { parseCacheControl } from '../../shared/shape-client/cache'
import { compareOffsets } from '../../shared/shape-client/offsets'
import { maskHeaders } from '../../shared/shape-client/recorder'
import { DOCTOR_RULES, type DoctorFindingId } from './rules'
import type { ShapeExchange } from './timeline'

const BODY_CHARS = 2_000

interface Diagnosis {
  id: DoctorFindingId
  message: string
  evidence: Array<[label: string, exchange: ShapeExchange]>
  /** A cause-specific fix instead of the rule's own. */
  fix?: string | null
}

const numbers = (list: readonly ShapeExchange[]) => list.map((exchange) => `#${exchange.entry.n}`).join(', ')
const fromCache = (exchange: ShapeExchange) => ['hit', 'stale', 'browser'].includes(exchange.entry.cache.status)
const cacheWords = (exchange: ShapeExchange) =>
  exchange.entry.cache.status === 'browser'
    ? "the browser's own cache"
    : `a cache in between (${exchange.entry.cache.evidence})`
const ok = (exchange: ShapeExchange) =>
  exchange.entry.status !== null && exchange.entry.status >= 200 && exchange.entry.status < 300
const isPosition = (offset: string | null): offset is string => offset !== null && /^(\d+|inf)_(\d+|inf)$/.test(offset)
const seconds = (ms: number | null) => `${((ms ?? 0) / 1000).toFixed(1)} s`

function evidenceOf(label: string, { raw, entry }: ShapeExchange): Evidence {
  const body = raw.body ?? ''
  return {
    label,
    request: {
      method: raw.method,
      url: entry.url,
      headers: maskHeaders(raw.requestHeaders),
      ...(raw.requestBody ? { body: raw.requestBody } : {})
    },
    response:
      raw.status === null
        ? null
        : {
            status: raw.status,
            headers: maskHeaders(raw.responseHeaders),
            body: body.slice(0, BODY_CHARS),
            truncated: raw.truncated || body.length > BODY_CHARS,
            headMs: raw.headMs ?? 0,
            endMs: raw.endMs
          },
    ...(raw.frames.length > 0 ? { frames: raw.frames.slice(0, 20) } : {}),
    ...(raw.error ? { error: raw.error } : {})
  }
}

/** 409s that a cache answered. */
function cachedConflicts(list: readonly ShapeExchange[]): Diagnosis[] {
  const cached = list.filter((exchange) => exchange.entry.status === 409 && fromCache(exchange))
  if (cached.length === 0) return []
  return [
    {
      id: 'doctor.cached-conflict',
      message: `${numbers(cached)}: the 409 must-refetch came from ${cacheWords(cached[0]!)}, not from the server: every client that asks for that URL again is sent back to the start.`,
      evidence: cached.map((exchange) => [`#${exchange.entry.n} (cached 409)`, exchange])
    }
  ]
}

/** Fresh syncs after a must-refetch that got the refused handle back. */
function staleHandles(list: readonly ShapeExchange[]): Diagnosis[] {
  const pairs: Array<[conflict: ShapeExchange, refetch: ShapeExchange]> = []
  list.forEach((conflict, index) => {
    const refused = conflict.entry.request.handle
    // A 409 a cache kept refuses a handle the server may still serve: that is doctor.cached-conflict's case.
    if (!conflict.entry.response.mustRefetch || refused === null || fromCache(conflict)) return
    const refetch = list.slice(index + 1).find((exchange) => exchange.entry.request.offset === '-1')
    if (refetch && refetch.entry.response.handle === refused) pairs.push([conflict, refetch])
  })
  if (pairs.length === 0) return []
  const [conflict, refetch] = pairs[0]!
  const refused = conflict.entry.request.handle
  const who = fromCache(refetch)
    ? cacheWords(refetch)
    : 'a cache in between (the answer carries no cache status, but the server never hands out a handle it refused)'
  const buster = refetch.entry.request.cacheBuster
    ? ' although the request carried a `cache-buster`, so the cache keys without the query string'
    : ''
  const more =
    pairs.length > 1
      ? ` The same after ${pairs
          .slice(1)
          .map(([other, again]) => `#${other.entry.n} (#${again.entry.n})`)
          .join(', ')}.`
      : ''
  const browser = refetch.entry.cache.status === 'browser'
  return [
    {
      id: 'doctor.stale-handle',
      message: `#${refetch.entry.n}: the fresh sync after the must-refetch of #${conflict.entry.n} got the refused handle ${refused} again, from ${who}${buster}; the client follows it straight into the next 409.${more}`,
      evidence: [
        [`#${conflict.entry.n} (must-refetch of ${refused})`, conflict],
        [`#${refetch.entry.n} (fresh sync, old handle)`, refetch]
      ],
      ...(browser && !refetch.entry.request.cacheBuster
        ? {
            fix: 'The client re-requests `offset=-1` without a `cache-buster`, so the browser serves its cached answer: update the shape client (`@electric-sql/client` adds one), or send the initial answer with a shorter `max-age` (`--cache-max-age`).'
          }
        : {})
    }
  ]
}

/** Live answers that are older than the request: a cursor not moved on, or older than their freshness allows. */
function staleLive(list: readonly ShapeExchange[]): Diagnosis[] {
  const stale = list.filter((exchange) => {
    if (exchange.entry.request.live !== 'long-poll' || !ok(exchange)) return false
    const sent = exchange.entry.request.cursor
    const got = exchange.entry.response.cursor
    const repeated =
      sent !== null && got !== null && /^\d+$/.test(sent) && /^\d+$/.test(got) && BigInt(got) <= BigInt(sent)
    const age = Number(exchange.raw.responseHeaders.find(([name]) => name.toLowerCase() === 'age')?.[1] ?? 0)
    const directives = parseCacheControl(
      exchange.raw.responseHeaders.find(([name]) => name.toLowerCase() === 'cache-control')?.[1] ?? null
    )
    const limit =
      directives.reduce(
        (sum, { name, value }) =>
          name === 'max-age' || name === 'stale-while-revalidate' ? sum + Number(value ?? 0) : sum,
        0
      ) || 10
    return repeated || age > limit
  })
  if (stale.length === 0) return []
  const cached = stale.filter(fromCache)
  const who = cached.length > 0 ? cacheWords(cached[0]!) : 'the server or a cache that sets no status header'
  return [
    {
      id: 'doctor.stale-live',
      message: `${numbers(stale)}: a live answer came back with a cursor not past the one sent (or older than its max-age), from ${who}: the client's next live URL repeats and it is handed the same old answer.`,
      evidence: stale
        .slice(0, 4)
        .map((exchange) => [
          `#${exchange.entry.n} (live, cursor ${exchange.entry.request.cursor} → ${exchange.entry.response.cursor})`,
          exchange
        ])
    }
  ]
}

/** Three or more must-refetches of one shape, with the cause found by the other rules. */
function refetchLoop(list: readonly ShapeExchange[], causes: readonly Diagnosis[]): Diagnosis[] {
  const refetches = list.filter((exchange) => exchange.entry.response.mustRefetch)
  if (refetches.length < 3) return []
  const cause = causes.find((diagnosis) =>
    ['doctor.cached-conflict', 'doctor.stale-handle', 'doctor.stale-live'].includes(diagnosis.id)
  )
  const because =
    cause?.id === 'doctor.cached-conflict'
      ? 'a cached 409 (see doctor.cached-conflict)'
      : cause?.id === 'doctor.stale-handle'
        ? 'an old handle served from a cache (see doctor.stale-handle)'
        : cause?.id === 'doctor.stale-live'
          ? 'a cursor repeated by a cache (see doctor.stale-live)'
          : 'the server refusing handles it just gave out: the shape is replaced again and again (something DELETEs it, or the server loses its shape logs)'
  return [
    {
      id: 'doctor.refetch-loop',
      message: `${refetches.length} must-refetches of one shape (${numbers(refetches.slice(0, 12))}${refetches.length > 12 ? ', …' : ''}): a re-sync loop, caused by ${because}.`,
      evidence: refetches.slice(0, 3).map((exchange) => [`#${exchange.entry.n} (must-refetch)`, exchange]),
      fix: cause
        ? (DOCTOR_RULES[cause.id].fix ?? null)
        : 'Find what drops the shape: the server log, `DELETE /v1/shape` calls, or a server without persistent shape logs behind a load balancer.'
    }
  ]
}

/** Long-polls cut by something in between: a gateway error or a failure before the server's timeout. */
function liveCut(list: readonly ShapeExchange[]): Diagnosis[] {
  const cut = list.filter(
    (exchange) =>
      exchange.entry.request.live === 'long-poll' &&
      (exchange.entry.status === 502 || exchange.entry.status === 504) &&
      !exchange.brand
  )
  if (cut.length === 0) return []
  return [
    {
      id: 'doctor.live-cut',
      message: `${numbers(cut)}: a long-poll was answered ${cut[0]!.entry.status} after ${seconds(cut[0]!.entry.endMs)} by something in front of the server (no protocol headers): it does not wait as long as the server holds a live request.`,
      evidence: cut.slice(0, 3).map((exchange) => [`#${exchange.entry.n} (cut long-poll)`, exchange])
    }
  ]
}

/** SSE streams whose head or frames were held back, and the client's fallback to long-polling. */
function sseTrouble(list: readonly ShapeExchange[]): Diagnosis[] {
  const sse = list.filter((exchange) => exchange.entry.request.live === 'sse' && ok(exchange))
  const found: Diagnosis[] = []
  const compressed = sse.filter((exchange) =>
    /^(gzip|br|deflate|zstd)/.test(
      exchange.raw.responseHeaders.find(([name]) => name.toLowerCase() === 'content-encoding')?.[1] ?? ''
    )
  )
  if (compressed.length > 0) {
    found.push({
      id: 'doctor.sse-compressed',
      message: `${numbers(compressed)}: the event stream was compressed, which holds frames back until a compression buffer fills.`,
      evidence: compressed.slice(0, 3).map((exchange) => [`#${exchange.entry.n} (compressed SSE)`, exchange])
    })
  }
  const held = sse.filter(({ raw }) => {
    const lateHead = (raw.headMs ?? 0) >= 2_000 && raw.endMs !== null && raw.endMs - (raw.headMs ?? 0) < 200
    const first = raw.frames[0]
    const last = raw.frames.at(-1)
    const together =
      first !== undefined &&
      last !== undefined &&
      raw.frames.length > 1 &&
      last.atMs - first.atMs < 50 &&
      first.atMs >= 2_000
    return lateHead || together
  })
  // The server sends an SSE head at once: one still awaited when the recording ended was held back.
  const waiting = list.filter(
    (exchange) =>
      exchange.entry.request.live === 'sse' && exchange.entry.status === null && exchange.entry.error === null
  )
  const fallback = list.find((exchange, index) => {
    if (exchange.entry.request.live !== 'long-poll') return false
    const earlier = list.slice(0, index)
    const lastSse = earlier.findLastIndex((candidate) => candidate.entry.request.live === 'sse')
    return lastSse !== -1 && !earlier.slice(lastSse).some((candidate) => candidate.entry.response.mustRefetch)
  })
  if (held.length === 0 && waiting.length === 0 && (!fallback || compressed.length > 0)) return found
  const shown = held.length > 0 ? held : waiting.length > 0 ? waiting : sse.slice(-3)
  const heldWords =
    held.length > 0
      ? `${numbers(held)}: the SSE response head or its frames arrived only ${seconds(held[0]!.raw.headMs)} after the request, together with the end of the stream`
      : waiting.length > 0
        ? `${numbers(waiting)}: the SSE request had no response head by the end of the recording, though the server sends it at once`
        : `${numbers(shown)}: the SSE streams were closed soon after they opened`
  const fallbackWords = fallback
    ? `; from #${fallback.entry.n} on the client long-polls instead (its fallback when SSE keeps failing)`
    : ''
  found.push({
    id: 'doctor.sse-buffered',
    message: `${heldWords}${fallbackWords}: a proxy buffers the stream.`,
    evidence: [
      ...shown.slice(0, 3).map((exchange): [string, ShapeExchange] => [`#${exchange.entry.n} (SSE)`, exchange]),
      ...(fallback ? [[`#${fallback.entry.n} (fallback long-poll)`, fallback] as [string, ShapeExchange]] : [])
    ]
  })
  return found
}

/** Follows each handle's log through the answers: positions skipped or read twice, keys inserted twice or never. */
function logContinuity(list: readonly ShapeExchange[]): Diagnosis[] {
  const duplicates: Array<[string, ShapeExchange]> = []
  const missing: Array<[string, ShapeExchange]> = []
  const backwards: Array<[string, ShapeExchange]> = []
  const handles = new Map<string, { next: string | null; keys: Set<string> | null; read: Map<string, ShapeExchange> }>()
  for (const exchange of list) {
    const { request, response } = exchange.entry
    const handle = response.handle ?? request.handle
    if (handle === null) continue
    // A must-refetch throws away what the client holds: reading the log again from -1 is expected, not a duplicate.
    if (response.mustRefetch && request.handle !== null) handles.delete(request.handle)
    if (!ok(exchange)) continue
    const fromStart = request.offset === '-1'
    // A sync from -1 starts the client over: what it read of this handle before is thrown away.
    if (fromStart) handles.delete(handle)
    const state = handles.get(handle) ?? {
      next: null,
      keys: fromStart && !exchange.raw.url.includes('log=changes_only') ? new Set<string>() : null,
      read: new Map()
    }
    handles.set(handle, state)
    if (
      isPosition(request.offset) &&
      isPosition(response.offset) &&
      request.live !== 'sse' &&
      compareOffsets(response.offset, request.offset) < 0
    ) {
      backwards.push([`#${exchange.entry.n} (asked ${request.offset}, answered ${response.offset})`, exchange])
    }
    if (isPosition(request.offset) && state.next !== null && request.live !== 'sse') {
      const order = compareOffsets(request.offset, state.next)
      if (order > 0)
        missing.push([`#${exchange.entry.n} (asked ${request.offset}, the log was read to ${state.next})`, exchange])
      if (order < 0)
        backwards.push([`#${exchange.entry.n} (asked ${request.offset} after reading to ${state.next})`, exchange])
    }
    const key = `${request.offset}`
    const before = state.read.get(key)
    if (exchange.changes.length > 0 && before && before.changes.length > 0 && request.live !== 'sse') {
      duplicates.push([`#${exchange.entry.n} (the log after ${request.offset} again, as #${before.entry.n})`, exchange])
    } else if (state.keys) {
      for (const change of exchange.changes) {
        if (change.operation === 'insert' && state.keys.has(change.key)) {
          duplicates.push([`#${exchange.entry.n} (insert of ${change.key} again)`, exchange])
          break
        }
        if (change.operation !== 'insert' && !state.keys.has(change.key)) {
          missing.push([`#${exchange.entry.n} (${change.operation} of ${change.key}, never inserted)`, exchange])
          break
        }
        if (change.operation === 'delete') state.keys.delete(change.key)
        else state.keys.add(change.key)
      }
    }
    if (exchange.changes.length > 0) state.read.set(key, exchange)
    // An SSE answer's offset header is the one asked for; the client goes on from the last up-to-date's LSN instead.
    state.next = request.live === 'sse' || exchange.unreadable ? null : response.offset
  }
  const found: Diagnosis[] = []
  const name = (items: Array<[string, ShapeExchange]>) => items.map(([, exchange]) => `#${exchange.entry.n}`).join(', ')
  if (duplicates.length > 0)
    found.push({
      id: 'doctor.duplicate-messages',
      message: `${name(duplicates)}: messages the client had already received came again (${duplicates[0]![0].replace(/^#\d+ \(|\)$/g, '')}).`,
      evidence: duplicates.slice(0, 4)
    })
  if (missing.length > 0)
    found.push({
      id: 'doctor.missing-messages',
      message: `${name(missing)}: part of the log never reached the client (${missing[0]![0].replace(/^#\d+ \(|\)$/g, '')}).`,
      evidence: missing.slice(0, 4)
    })
  if (backwards.length > 0)
    found.push({
      id: 'doctor.offset-backwards',
      message: `${name(backwards)}: the offset went backwards (${backwards[0]![0].replace(/^#\d+ \(|\)$/g, '')}).`,
      evidence: backwards.slice(0, 4)
    })
  return found
}

/** A shape whose answers never said up-to-date, with the cause when a cache repeats one answer. */
function upToDateNever(list: readonly ShapeExchange[]): Diagnosis[] {
  const answered = list.filter(ok)
  if (answered.length === 0 || answered.some((exchange) => exchange.entry.response.upToDate)) return []
  const etag = (exchange: ShapeExchange) =>
    exchange.raw.responseHeaders.find(([name]) => name.toLowerCase() === 'etag')?.[1] ?? null
  const repeated = answered.filter((exchange, index) => {
    const first = answered.findIndex((other) => etag(other) !== null && etag(other) === etag(exchange))
    return first !== -1 && first < index && answered[first]!.raw.url !== exchange.raw.url
  })
  const cause =
    repeated.length > 0
      ? ` ${numbers(repeated)} got the very answer (etag ${etag(repeated[0]!)}) of #${answered.find((other) => etag(other) === etag(repeated[0]!))!.entry.n} for another URL: a cache keyed without the query string.`
      : ''
  return [
    {
      id: 'doctor.up-to-date-never',
      message: `${answered.length} answers (${numbers(answered.slice(0, 8))}${answered.length > 8 ? ', …' : ''}) and none said up-to-date: the client never finished its initial sync.${cause}`,
      evidence: [...answered.slice(0, 2), ...repeated.slice(0, 2)].map((exchange) => [
        `#${exchange.entry.n}`,
        exchange
      ]),
      ...(repeated.length > 0 ? { fix: DOCTOR_RULES['doctor.stale-handle'].fix } : {})
    }
  ]
}

function missingHeaders(list: readonly ShapeExchange[]): Diagnosis[] {
  const bare = list.filter(
    (exchange) =>
      ok(exchange) &&
      exchange.raw.method === 'GET' &&
      (exchange.entry.response.handle === null || exchange.entry.response.offset === null)
  )
  if (bare.length === 0) return []
  return [
    {
      id: 'doctor.headers-missing',
      message: `${numbers(bare)}: a 200 of the shape log without its handle or offset header: the client stops with a protocol error.`,
      evidence: bare.slice(0, 3).map((exchange) => [`#${exchange.entry.n}`, exchange])
    }
  ]
}

function cachedErrors(list: readonly ShapeExchange[]): Diagnosis[] {
  const cached = list.filter(
    (exchange) =>
      exchange.entry.status !== null &&
      exchange.entry.status >= 400 &&
      exchange.entry.status !== 409 &&
      fromCache(exchange)
  )
  if (cached.length === 0) return []
  return [
    {
      id: 'doctor.cached-error',
      message: `${numbers(cached)}: the error ${cached[0]!.entry.status} came from ${cacheWords(cached[0]!)}: every client asking that URL gets it.`,
      evidence: cached.slice(0, 3).map((exchange) => [`#${exchange.entry.n}`, exchange])
    }
  ]
}

function toFinding(diagnosis: Diagnosis, brand: string): Finding {
  const rule = DOCTOR_RULES[diagnosis.id]
  return {
    id: diagnosis.id,
    severity: rule.severity,
    message: diagnosis.message,
    rule: { text: rule.rule.replaceAll('<brand>', brand), doc: `docs/protocol.md${rule.section}` },
    fix: (diagnosis.fix === undefined ? rule.fix : diagnosis.fix)?.replaceAll('<brand>', brand) ?? null,
    evidence: diagnosis.evidence.map(([label, exchange]) => evidenceOf(label, exchange))
  }
}

/** The doctor's diagnoses of one shape's requests (in the order they were sent), as findings. */
export function diagnoseShape(list: readonly ShapeExchange[]): Finding[] {
  const causes = [...cachedConflicts(list), ...staleHandles(list), ...staleLive(list)]
  const diagnoses = [
    ...refetchLoop(list, causes),
    ...causes,
    ...upToDateNever(list),
    ...missingHeaders(list),
    ...cachedErrors(list),
    ...liveCut(list),
    ...sseTrouble(list),
    ...logContinuity(list)
  ]
  const brand = list.find((exchange) => exchange.brand)?.brand ?? 'service'
  return diagnoses.map((diagnosis) => toFinding(diagnosis, brand))
}

/** What looks wrong but is not: long-polls held by design, which DevTools shows as slow requests. */
export function explainShape(list: readonly ShapeExchange[]): string[] {
  const held = list.filter(
    (exchange) => exchange.entry.request.live === 'long-poll' && ok(exchange) && (exchange.entry.endMs ?? 0) >= 1_000
  )
  if (held.length === 0) return []
  const shown = held
    .slice(0, 6)
    .map((exchange) => `#${exchange.entry.n} (${seconds(exchange.entry.endMs)})`)
    .join(', ')
  return [
    `${shown}${held.length > 6 ? ', …' : ''}: long-polls (\`live=true\`). The server holds a live request until a change lands or its timeout (20 s) passes, so these look slow in DevTools' waterfall; that is by design, not slowness.`
  ]
}
