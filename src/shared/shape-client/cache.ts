import CachePolicy from 'http-cache-semantics'
import type { Exchange, HeaderList } from './recorder'

export interface CacheDirective {
  name: string
  value: string | null
}

/** `public, max-age=60, stale-while-revalidate=300` → its directives, names lower-cased. */
export function parseCacheControl(header: string | null): CacheDirective[] {
  if (!header) return []
  return header
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [name = '', ...rest] = part.split('=')
      const value =
        rest.length > 0
          ? rest
              .join('=')
              .trim()
              .replace(/^"(.*)"$/, '$1')
          : null
      return { name: name.trim().toLowerCase(), value }
    })
}

/** 604800 → "7 days". */
export function formatSeconds(seconds: number): string {
  const units: Array<[number, string]> = [
    [86_400, 'day'],
    [3_600, 'hour'],
    [60, 'minute'],
    [1, 'second']
  ]
  const [size, unit] = units.find(([unitSize]) => seconds >= unitSize) ?? [1, 'second']
  const count = Math.round((seconds / size) * 10) / 10
  return `${count} ${unit}${count === 1 ? '' : 's'}`
}

/** What a cache-control header lets caches do, in plain words, one sentence per fact. */
export function cacheVerdict(header: string | null): string[] {
  const directives = new Map(parseCacheControl(header).map(({ name, value }) => [name, value]))
  const seconds = (name: string) => {
    const value = Number(directives.get(name))
    return directives.has(name) && Number.isFinite(value) ? value : null
  }
  if (!header)
    return ['No cache-control: caches fall back to heuristics (usually not stored for responses like these).']
  if (directives.has('no-store')) return ['No cache may store it: every request goes to the server.']
  const sentences: string[] = []
  const shared = !directives.has('private')
  sentences.push(
    shared
      ? 'Browsers and shared caches (CDNs, proxies) may store it.'
      : 'Only the browser may store it; shared caches (CDNs, proxies) must not.'
  )
  if (directives.has('no-cache')) sentences.push('Every reuse must first be revalidated with the server.')
  const maxAge = seconds('max-age')
  const sMaxAge = seconds('s-maxage')
  if (maxAge !== null && !directives.has('no-cache')) {
    sentences.push(
      shared && sMaxAge !== null && sMaxAge !== maxAge
        ? `Fresh for ${formatSeconds(maxAge)} in the browser and ${formatSeconds(sMaxAge)} in shared caches.`
        : `Fresh for ${formatSeconds(maxAge)}.`
    )
  }
  const swr = seconds('stale-while-revalidate')
  if (swr !== null)
    sentences.push(
      `Once stale, it may still be served for ${formatSeconds(swr)} while the cache revalidates it in the background.`
    )
  if (directives.has('must-revalidate'))
    sentences.push('Once stale, it must not be served without revalidating it first.')
  if (directives.has('immutable')) sentences.push('Marked immutable: never revalidated while fresh.')
  return sentences
}

export type CacheOutcome = 'HIT' | 'STALE' | 'MISS'

export interface SimulatedRequest {
  outcome: CacheOutcome
  reason: string
  /** How long a shared cache keeps the response fresh (seconds); null when it may not store it at all. */
  sharedTtlSeconds: number | null
  /** Positions (in the simulated list) of live requests for the same URL in flight at the same time: a collapsing CDN sends one origin request for all of them. */
  collapsesWith: number[]
}

const headerObject = (headers: HeaderList, url: string): Record<string, string> => ({
  ...Object.fromEntries(headers.map(([name, value]) => [name.toLowerCase(), value])),
  host: new URL(url).host
})

interface Stored {
  policy: CachePolicy
}

/**
 * Replays recorded exchanges (of one or several clients) through a simulated shared cache (a CDN in front of the
 * server) on the recorded clock: would each request have been answered from cache (HIT), from a stale entry while
 * revalidating (STALE), or by the server (MISS)? Uses http-cache-semantics, so the verdict follows RFC 9111 as that
 * library reads it. The results line up with the exchanges given.
 */
export function simulateSharedCache(exchanges: readonly Exchange[]): SimulatedRequest[] {
  let clock = 0
  class ClockedPolicy extends CachePolicy {
    now(): number {
      return clock
    }
  }
  const store = new Map<string, Stored>()
  const events = exchanges.flatMap((exchange, index) => {
    const lookup = { at: exchange.request.at, order: 0, index, kind: 'lookup' as const }
    return exchange.response
      ? [lookup, { at: exchange.response.at, order: 1, index, kind: 'store' as const }]
      : [lookup]
  })
  events.sort((a, b) => a.at - b.at || a.order - b.order)
  const results: SimulatedRequest[] = exchanges.map(() => ({
    outcome: 'MISS',
    reason: '',
    sharedTtlSeconds: null,
    collapsesWith: []
  }))
  for (const event of events) {
    clock = event.at
    const { request, response } = exchanges[event.index] as Exchange
    const result = results[event.index] as SimulatedRequest
    const cacheRequest = {
      url: request.url,
      method: request.method,
      headers: headerObject(request.headers, request.url)
    }
    if (event.kind === 'lookup') {
      Object.assign(result, lookup(store.get(request.url), cacheRequest))
      continue
    }
    if (!response) continue
    const policy = new ClockedPolicy(
      cacheRequest,
      { status: response.status, headers: headerObject(response.headers, request.url) },
      { shared: true }
    )
    if (policy.storable()) {
      store.set(request.url, { policy })
      result.sharedTtlSeconds = Math.round(policy.maxAge())
    }
  }
  markCollapsible(exchanges, results)
  return results
}

function lookup(
  stored: Stored | undefined,
  request: CachePolicy.Request
): Pick<SimulatedRequest, 'outcome' | 'reason'> {
  if (!stored) return { outcome: 'MISS', reason: 'nothing stored for this URL' }
  if (stored.policy.satisfiesWithoutRevalidation(request))
    return { outcome: 'HIT', reason: `fresh copy, ${Math.round(stored.policy.age())} s old` }
  const evaluation = stored.policy.evaluateRequest(request)
  if (evaluation.response && evaluation.revalidation && !evaluation.revalidation.synchronous) {
    return { outcome: 'STALE', reason: 'stale copy served while the cache revalidates (stale-while-revalidate)' }
  }
  return {
    outcome: 'MISS',
    reason: stored.policy.stale()
      ? 'stored copy is stale: the server is asked (conditional request)'
      : 'stored copy does not match this request (Vary)'
  }
}

/** Live requests for the same URL whose time in flight overlaps would be merged by a collapsing CDN. */
function markCollapsible(exchanges: readonly Exchange[], results: SimulatedRequest[]): void {
  const end = (exchange: Exchange) => exchange.body?.at ?? exchange.failure?.at ?? exchange.response?.at ?? Infinity
  const live = exchanges
    .map((exchange, index) => ({ exchange, index }))
    .filter(({ exchange }) => exchange.request.live !== 'off')
  for (const { exchange, index } of live) {
    const result = results[index] as SimulatedRequest
    result.collapsesWith = live
      .filter(({ exchange: other }) => other !== exchange && other.request.url === exchange.request.url)
      .filter(({ exchange: other }) => other.request.at < end(exchange) && exchange.request.at < end(other))
      .map(({ index: other }) => other)
  }
}
