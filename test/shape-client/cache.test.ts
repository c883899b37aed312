import { describe, expect, it } from 'vitest'
import {
  cacheVerdict,
  formatSeconds,
  parseCacheControl,
  simulateSharedCache
} from '../../src/shared/shape-client/cache'
import type { Exchange, LiveMode } from '../../src/shared/shape-client/recorder'

const INITIAL = 'public, max-age=604800, s-maxage=3600, stale-while-revalidate=2629746'
const LIVE = 'public, max-age=5, stale-while-revalidate=5'

describe('cache-control', () => {
  it('parses directives', () => {
    expect(parseCacheControl(INITIAL)).toEqual([
      { name: 'public', value: null },
      { name: 'max-age', value: '604800' },
      { name: 's-maxage', value: '3600' },
      { name: 'stale-while-revalidate', value: '2629746' }
    ])
    expect(parseCacheControl('No-Cache, foo="a=b"')).toEqual([
      { name: 'no-cache', value: null },
      { name: 'foo', value: 'a=b' }
    ])
    expect(parseCacheControl(null)).toEqual([])
  })

  it('says in plain words who may cache and for how long', () => {
    expect(formatSeconds(604800)).toBe('7 days')
    expect(formatSeconds(3600)).toBe('1 hour')
    expect(formatSeconds(90)).toBe('1.5 minutes')
    expect(formatSeconds(2629746)).toBe('30.4 days')
    expect(cacheVerdict(INITIAL)).toEqual([
      'Browsers and shared caches (CDNs, proxies) may store it.',
      'Fresh for 7 days in the browser and 1 hour in shared caches.',
      'Once stale, it may still be served for 30.4 days while the cache revalidates it in the background.'
    ])
    expect(cacheVerdict(LIVE)).toContain('Fresh for 5 seconds.')
    expect(cacheVerdict('no-store')).toEqual(['No cache may store it: every request goes to the server.'])
    expect(cacheVerdict('private, no-cache')).toEqual([
      'Only the browser may store it; shared caches (CDNs, proxies) must not.',
      'Every reuse must first be revalidated with the server.'
    ])
    expect(cacheVerdict('public, max-age=60, must-revalidate')).toContain(
      'Once stale, it must not be served without revalidating it first.'
    )
  })
})

let nextId = 1
function exchange(url: string, at: number, cacheControl: string, live: LiveMode = 'off', duration = 10): Exchange {
  return {
    request: { id: nextId++, at, method: 'GET', url, headers: [], live },
    response: {
      at: at + duration,
      status: 200,
      statusText: 'OK',
      headers: [
        ['cache-control', cacheControl],
        ['etag', '"x"']
      ]
    },
    body: { at: at + duration, size: 2, text: '[]', truncated: false }
  }
}

describe('simulateSharedCache', () => {
  it('answers repeats from cache while fresh, stale within stale-while-revalidate, and misses after', () => {
    const url = 'http://127.0.0.1:1/v1/shape?offset=0_0&table=t'
    const t0 = 1_000_000
    const results = simulateSharedCache([
      exchange(url, t0, 'public, max-age=60, stale-while-revalidate=300'),
      exchange(url, t0 + 30_000, 'public, max-age=60, stale-while-revalidate=300'),
      exchange(url, t0 + 200_000, 'public, max-age=60, stale-while-revalidate=300'),
      exchange(url, t0 + 900_000, 'public, max-age=60, stale-while-revalidate=300'),
      exchange(`${url}&x=1`, t0 + 900_001, 'no-store'),
      exchange(`${url}&x=1`, t0 + 900_100, 'no-store')
    ])
    expect(results.map((result) => result.outcome)).toEqual(['MISS', 'HIT', 'STALE', 'MISS', 'MISS', 'MISS'])
    expect(results[0]?.sharedTtlSeconds).toBe(60)
    expect(results[4]?.sharedTtlSeconds).toBeNull()
  })

  it('marks concurrent live requests for the same URL as collapsible', () => {
    const live = 'http://127.0.0.1:1/v1/shape?cursor=20&live=true&offset=5_0&table=t'
    const [a, b, c, d] = [
      exchange(live, 0, LIVE, 'long-poll', 1000),
      exchange(live, 500, LIVE, 'long-poll', 600),
      exchange(live, 5000, LIVE, 'long-poll', 100),
      exchange(`${live}x`, 100, LIVE, 'long-poll', 1000)
    ]
    const results = simulateSharedCache([a, b, c, d] as Exchange[])
    expect(results.map((result) => result.collapsesWith)).toEqual([[1], [0], [], []])
  })
})
