import { type FaultCase } from './fault-case'
import { answers, isInitial, isLongPoll, isSubset, reply, requests, withHeaders } from './fault-edits'

/** cache-control, caches in front, CORS and subsets. */
export const CACHING_FAULTS: FaultCase[] = [
  {
    mode: 'initial-not-cacheable',
    what: 'offset=-1 answers say no-store',
    fault: { answer: answers(200, (a) => withHeaders(a, { 'cache-control': 'no-store' }), isInitial) },
    checks: ['initial-sync'],
    finding: 'cache.initial',
    cause: /The offset=-1 answer says `cache-control: no-store`/,
    fix: null
  },
  {
    mode: 'errors-cacheable',
    what: 'error answers are cacheable for an hour',
    fault: { answer: answers(400, (a) => withHeaders(a, { 'cache-control': 'public, max-age=3600' })) },
    checks: ['params'],
    finding: 'cache.error-cacheable',
    cause: /A 400 says `cache-control: public, max-age=3600` instead of `no-store`/,
    fix: /proxy_cache_valid/
  },
  {
    mode: 'conflict-cacheable',
    what: 'a 409 is cacheable for an hour',
    fault: { answer: answers(409, (a) => withHeaders(a, { 'cache-control': 'public, max-age=3600' })) },
    checks: ['handles'],
    finding: 'cache.conflict-cacheable',
    cause: /The 409 says `cache-control: public, max-age=3600`/,
    fix: null
  },
  {
    mode: 'live-cacheable-long',
    what: 'live answers are cacheable for a minute',
    fault: { answer: answers(200, (a) => withHeaders(a, { 'cache-control': 'public, max-age=60' }), isLongPoll) },
    checks: ['long-poll'],
    finding: 'cache.live-too-long',
    cause: /caches may reuse it for 60 s/,
    fix: null
  },
  {
    mode: 'subset-cacheable',
    what: 'subset answers are cacheable for an hour',
    fault: { answer: answers(200, (a) => withHeaders(a, { 'cache-control': 'public, max-age=3600' }), isSubset) },
    checks: ['subsets'],
    finding: 'cache.subset-cacheable',
    cause: /The subset answer says `cache-control: public, max-age=3600`/,
    fix: null
  },
  {
    mode: 'cache-key-path-only',
    what: 'a cache keyed on the path alone',
    fault: { cache: { key: (asked) => asked.url.pathname } },
    checks: ['cache-key', 'offset-now'],
    finding: 'cache.query-ignored',
    cause: /a cache (served|answers)/,
    fix: /proxy_cache_key/
  },
  {
    mode: 'cache-key-path-only-slow-store',
    what: 'a cache keyed on the path alone that stores an answer 300 ms after sending it (a busy nginx)',
    fault: { cache: { key: (asked) => asked.url.pathname, storeAfterMs: 300 } },
    checks: ['cache-key'],
    finding: 'cache.query-ignored',
    cause: /a cache (served|answers)/,
    fix: /proxy_cache_key/
  },
  {
    mode: 'cache-ignores-cache-control',
    what: 'a cache that keeps every 200 for ever',
    fault: { cache: { key: (asked) => asked.url.href, ignoreCacheControl: true } },
    checks: ['cache-honoured'],
    finding: 'cache.cache-control-ignored',
    cause: /was served again a second later, the same snapshot/,
    fix: /proxy_ignore_headers Cache-Control/
  },
  {
    mode: 'cache-ignores-vary',
    what: 'a cache that ignores Vary: Origin',
    fault: { cache: { key: (asked) => asked.url.href, ignoreVary: true } },
    checks: ['cors'],
    finding: 'cache.vary-ignored',
    cause: /was handed the answer for .*, although the origin said `Vary: Origin`/,
    fix: /remove `Vary` from `proxy_ignore_headers`/
  },
  {
    mode: 'vary-stripped',
    what: 'a proxy hides Vary',
    fault: { answer: (answer) => withHeaders(answer, { vary: null }) },
    checks: ['cors'],
    finding: 'cors.vary-missing',
    cause: /The Origin is echoed in access-control-allow-origin without `Vary: Origin`/,
    fix: /add_header Vary Origin/
  },
  {
    mode: 'expose-headers-stripped',
    what: 'a proxy hides access-control-expose-headers',
    fault: { answer: (answer) => withHeaders(answer, { 'access-control-expose-headers': null }) },
    checks: ['cors'],
    finding: 'cors.expose-missing',
    cause: /access-control-expose-headers does not list service-handle, service-offset/,
    fix: /access-control-expose-headers/
  },
  {
    mode: 'preflight-refused',
    what: 'OPTIONS is answered 405',
    fault: {
      request: requests(
        (asked) => asked.method === 'OPTIONS',
        () => reply(405, { message: 'method not allowed' })
      )
    },
    checks: ['cors'],
    finding: 'cors.preflight',
    cause: /The preflight was answered 405/,
    fix: null
  },
  {
    mode: 'subset-post-refused',
    what: 'POST is answered 405',
    fault: {
      request: requests(
        (asked) => asked.method === 'POST',
        () => reply(405, { message: 'method not allowed' })
      )
    },
    checks: ['subsets'],
    finding: 'subset.post',
    cause: /The subset request was answered 405/,
    fix: null
  },
  {
    mode: 'subset-get-refused',
    what: 'GET with subset__* parameters is refused',
    fault: {
      request: requests(
        (asked) => asked.method === 'GET' && isSubset(asked),
        () => reply(400, { message: 'Invalid request', errors: { subset__where: ['unknown parameter'] } })
      )
    },
    checks: ['subsets'],
    finding: 'subset.get',
    cause: /The subset request was answered 400/,
    fix: null
  }
]
