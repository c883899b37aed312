import { Transform } from 'node:stream'
import type { FindingId } from '../../../src/main/checker/rules'
import type { Answer, Fault } from './fault-proxy'
import {
  answers,
  framewise,
  gzipBomb,
  gzipped,
  heldFor,
  isCatchUp,
  isChange,
  isInitial,
  isLongPoll,
  isSse,
  isSubset,
  param,
  reply,
  requests,
  withHeaders,
  withMessages,
  withoutControl,
  withParams
} from './fault-edits'

/** One protocol rule broken in front of a sound server, and what `syncscope check` must say about it. */
export interface FaultCase {
  /** The mode's name (its path segment at the proxy). */
  mode: string
  /** The fault in words. */
  what: string
  fault: Fault
  /** The checks run against it. */
  checks: string[]
  /** The finding that names it… */
  finding: FindingId
  /** …with the cause in its message, and its fix (null: the catalogue gives none). */
  cause: RegExp
  fix: RegExp | null
  /** Other findings the same fault rightly causes: the run's findings are exactly `finding` and these. */
  also?: FindingId[]
  /** Needs --write-sql (the live checks commit rows). */
  writes?: boolean
  maxWaitSeconds?: number
}

const PASS_HEADERS = /^Pass every `service-\*` response header through the proxy\/CDN/
const STRIPPED_SSE_COMMENTS = /drops SSE comment lines/
const live = (answer: Answer) => answer.headers['service-cursor'] !== undefined
const BOMB = gzipBomb(256)

const SYNC: FaultCase[] = [
  {
    mode: 'connection-reset',
    what: 'every connection is dropped before an answer',
    fault: { request: () => 'reset' },
    checks: ['initial-sync', 'offset-now'],
    finding: 'setup.unreachable',
    cause: /request failed: .*(other side closed|socket hang up|ECONNRESET)/,
    fix: null
  },
  {
    mode: 'protocol-headers-stripped',
    what: 'a proxy hides the handle, offset and schema headers',
    fault: {
      answer: answers(200, (a) =>
        withHeaders(a, { 'service-handle': null, 'service-offset': null, 'service-schema': null })
      )
    },
    checks: ['initial-sync'],
    finding: 'headers.missing',
    cause: /lacks `service-handle`, `service-offset`, `service-schema`/,
    fix: PASS_HEADERS
  },
  {
    mode: 'other-brand',
    what: 'the service names its headers electric-*',
    fault: {
      answer: (answer) => ({
        ...answer,
        headers: Object.fromEntries(
          Object.entries(answer.headers).map(([name, value]) => [name.replace(/^service-/, 'electric-'), value])
        )
      })
    },
    checks: ['initial-sync'],
    finding: 'headers.brand-mismatch',
    cause: /names its protocol headers `electric-\*`, not `service-\*`: run with --header-brand electric/,
    fix: /--header-brand/
  },
  {
    mode: 'initial-refused',
    what: 'offset=-1 is refused (403)',
    fault: { request: requests(isInitial, () => reply(403, { message: 'forbidden' })) },
    checks: ['initial-sync'],
    finding: 'initial.status',
    cause: /^offset=-1 was answered 403/,
    fix: null
  },
  {
    mode: 'html-body',
    what: 'a gateway answers with an HTML page',
    fault: {
      answer: answers(200, (a) => ({
        ...withHeaders(a, { 'content-type': 'text/html' }),
        body: Buffer.from('<html><body>Sign in</body></html>')
      }))
    },
    checks: ['initial-sync'],
    finding: 'initial.body',
    cause: /not a JSON array \(content-type text\/html\)/,
    fix: null
  },
  {
    mode: 'offset-stuck',
    what: 'catch-up answers keep the requested offset (and never say up-to-date)',
    fault: {
      answer: answers(
        200,
        (a, asked) =>
          withMessages(withHeaders(a, { 'service-offset': param(asked, 'offset') }), withoutControl('up-to-date')),
        isCatchUp
      )
    },
    checks: ['initial-sync'],
    finding: 'sync.no-progress',
    cause: /gives the same offset back with \d+ changes/,
    fix: null
  },
  {
    mode: 'offset-backwards',
    what: 'catch-up answers send the client back to 0_0',
    fault: {
      answer: answers(
        200,
        (a) => withHeaders(a, { 'service-offset': '0_0' }),
        (asked) => isCatchUp(asked) && param(asked, 'offset') !== '0_0'
      )
    },
    checks: ['initial-sync'],
    finding: 'sync.offset-backwards',
    cause: /^Asked for offset \S+, the answer's offset is 0_0/,
    fix: null
  },
  {
    mode: 'handle-changed',
    what: 'catch-up answers carry another handle',
    fault: { answer: answers(200, (a) => withHeaders(a, { 'service-handle': 'another-handle' }), isCatchUp) },
    checks: ['initial-sync'],
    finding: 'sync.handle-changed',
    cause: /handle changed from \S+ to another-handle without a 409/,
    fix: null
  },
  {
    mode: 'never-up-to-date',
    what: 'the service never sends up-to-date (neither the message nor the header)',
    fault: {
      answer: answers(200, (a) =>
        a.headers['content-type']?.startsWith('application/json')
          ? withMessages(withHeaders(a, { 'service-up-to-date': null }), withoutControl('up-to-date'))
          : a
      )
    },
    checks: ['initial-sync', 'offset-now'],
    finding: 'sync.up-to-date-missing',
    cause: /without up-to-date/,
    fix: null
  },
  {
    mode: 'up-to-date-header-stripped',
    what: 'a proxy hides service-up-to-date',
    fault: { answer: (answer) => withHeaders(answer, { 'service-up-to-date': null }) },
    checks: ['initial-sync'],
    finding: 'sync.up-to-date-header',
    cause: /ends with up-to-date but `service-up-to-date` is absent/,
    fix: PASS_HEADERS
  },
  {
    mode: 'snapshot-end-missing',
    what: 'the snapshot ends without snapshot-end',
    fault: {
      answer: answers(
        200,
        (a) => withMessages(a, withoutControl('snapshot-end')),
        (asked) => !isSubset(asked)
      )
    },
    checks: ['initial-sync'],
    finding: 'sync.snapshot-end-missing',
    cause: /No snapshot-end control message before up-to-date/,
    fix: null
  },
  {
    mode: 'duplicate-row',
    what: 'the snapshot sends its first row twice',
    fault: { answer: answers(200, (a) => withMessages(a, ([first, ...rest]) => [first!, first!, ...rest]), isInitial) },
    checks: ['initial-sync'],
    finding: 'sync.duplicate-key',
    cause: /The snapshot holds key \S+ twice/,
    fix: null
  },
  {
    mode: 'message-without-key',
    what: 'a change message has no key',
    fault: {
      answer: answers(
        200,
        (a) => withMessages(a, ([first, ...rest]) => [{ ...first!, key: undefined }, ...rest]),
        isInitial
      )
    },
    checks: ['initial-sync'],
    finding: 'sync.bad-message',
    cause: /A message does not have the protocol's form/,
    fix: null
  },
  {
    mode: 'now-refused',
    what: 'offset=now is refused (400)',
    fault: {
      request: requests(
        (asked) => param(asked, 'offset') === 'now',
        () => reply(400, { message: 'Invalid request', errors: { offset: ['must be -1 or an offset'] } })
      )
    },
    checks: ['offset-now'],
    finding: 'now.unsupported',
    cause: /^offset=now was answered 400/,
    fix: null
  },
  {
    mode: 'now-ignored',
    what: 'the service ignores offset=now and answers with the whole log',
    fault: {
      request: requests(
        (asked) => param(asked, 'offset') === 'now',
        (asked) => withParams(asked, { offset: '-1' })
      )
    },
    checks: ['offset-now', 'cache-key'],
    finding: 'now.ignored',
    cause: /offset=now was answered as offset=-1/,
    fix: null
  },
  {
    mode: 'etag-stripped',
    what: 'a proxy hides the etag',
    fault: { answer: (answer) => withHeaders(answer, { etag: null }) },
    checks: ['etag'],
    finding: 'etag.missing',
    cause: /The offset=-1 answer has no etag/,
    fix: /`etag` header/
  },
  {
    mode: 'if-none-match-dropped',
    what: 'a proxy drops If-None-Match',
    fault: { request: (asked) => ({ ...asked, headers: { ...asked.headers, 'if-none-match': '' } }) },
    checks: ['etag'],
    finding: 'etag.not-honoured',
    cause: /was answered 200, not 304/,
    fix: null
  },
  {
    mode: 'conflict-as-400',
    what: 'an unknown handle is answered 400',
    fault: {
      answer: answers(409, () => reply(400, { message: 'Invalid request', errors: { handle: ['not found'] } }))
    },
    checks: ['handles'],
    finding: 'handles.no-conflict',
    cause: /was answered 400, not 409/,
    fix: null
  },
  {
    mode: 'conflict-body',
    what: 'the 409 body is not must-refetch',
    fault: { answer: answers(409, (a) => ({ ...a, body: Buffer.from('{"message":"gone"}') })) },
    checks: ['handles'],
    finding: 'handles.conflict-body',
    cause: /The 409 body is \{"message":"gone"\}/,
    fix: null
  },
  {
    mode: 'conflict-without-handle',
    what: 'a proxy hides the handle of a 409',
    fault: { answer: answers(409, (a) => withHeaders(a, { 'service-handle': null })) },
    checks: ['handles'],
    finding: 'handles.conflict-no-handle',
    cause: /The 409 has no `service-handle`/,
    fix: PASS_HEADERS
  },
  {
    mode: 'params-unchecked',
    what: 'a missing offset is taken as -1',
    fault: {
      request: requests(
        (asked) => param(asked, 'offset') === null && asked.method === 'GET',
        (asked) => withParams(asked, { offset: '-1' })
      )
    },
    checks: ['params'],
    finding: 'params.not-validated',
    cause: /^no offset: answered 200 instead of 400/,
    fix: null
  },
  {
    mode: 'errors-as-500',
    what: "the caller's mistakes are answered 500",
    fault: { answer: answers(400, (a) => ({ ...a, status: 500 })) },
    checks: ['params'],
    finding: 'errors.server-error',
    cause: /answered 500, a server failure, for the caller's mistake/,
    fix: null
  },
  {
    mode: 'errors-as-text',
    what: 'error bodies are plain text',
    fault: {
      answer: answers(400, (a) => ({
        ...withHeaders(a, { 'content-type': 'text/plain' }),
        body: Buffer.from('Bad Request')
      }))
    },
    checks: ['params'],
    finding: 'errors.not-json',
    cause: /the 400 body is not JSON: Bad Request/,
    fix: null
  },
  {
    mode: 'gzip-bomb',
    what: 'offset=-1 is answered by a 260 KB gzip body that inflates to 256 MiB',
    fault: {
      request: requests(isInitial, () => ({
        ...withHeaders(reply(200, ''), { 'content-encoding': 'gzip', 'cache-control': 'public, max-age=60' }),
        body: BOMB
      }))
    },
    checks: ['initial-sync'],
    finding: 'body.too-large',
    cause: /more than 64 MiB/,
    fix: null
  }
]

const CACHING: FaultCase[] = [
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
    mode: 'sse-without-max-age',
    what: 'the event stream says no-cache',
    fault: { stream: { head: (headers) => (headers['cache-control'] = 'no-cache') } },
    checks: ['sse'],
    finding: 'cache.sse-max-age',
    cause: /The SSE response says `cache-control: no-cache`/,
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
  }
]

const LIVE: FaultCase[] = [
  {
    mode: 'long-poll-held',
    what: 'long-polls are never answered',
    fault: { request: requests(isLongPoll, () => 'hold') },
    checks: ['long-poll'],
    finding: 'live.never-answers',
    cause: /No answer within 45 s/,
    fix: /proxy_read_timeout/,
    maxWaitSeconds: 45
  },
  {
    mode: 'long-poll-not-held',
    what: 'long-polls are answered at once (the service treats live=true as a catch-up)',
    fault: {
      // sent on as a catch-up (marked, to dress its answer as a live one: cursor, cache-control)
      request: requests(isLongPoll, (asked) => ({
        ...withParams(asked, { live: null, cursor: null }),
        headers: { ...asked.headers, 'x-fault-was-live': '1' }
      })),
      answer: answers(
        200,
        (a) => withHeaders(a, { 'service-cursor': '199999999999', 'cache-control': 'public, max-age=5' }),
        (asked) => asked.headers['x-fault-was-live'] === '1'
      )
    },
    checks: ['long-poll'],
    finding: 'live.not-held',
    cause: /A live request with nothing new was answered after \d+ ms instead of being held/,
    fix: null
  },
  {
    mode: 'timeout-answer-empty',
    what: 'a long-poll that times out is answered []',
    fault: {
      answer: answers(
        200,
        (a) => (a.body.toString().includes('"key"') ? a : { ...a, body: Buffer.from('[]') }),
        isLongPoll
      )
    },
    checks: ['long-poll'],
    finding: 'live.timeout-answer',
    cause: /The timeout answer has messages \[\]/,
    fix: null
  },
  {
    mode: 'changes-dropped',
    what: 'live answers lose their changes',
    fault: {
      answer: answers(200, (a) => withMessages(a, (messages) => messages.filter((m) => !isChange(m))), isLongPoll)
    },
    checks: ['long-poll'],
    finding: 'live.change-not-delivered',
    cause: /The committed row is not in the answer/,
    fix: null,
    writes: true
  },
  {
    mode: 'cursor-stripped',
    what: 'a proxy hides the cursor',
    fault: { answer: (answer) => (live(answer) ? withHeaders(answer, { 'service-cursor': null }) : answer) },
    checks: ['long-poll'],
    finding: 'cursor.missing',
    cause: /The live answer has no `service-cursor` header/,
    fix: PASS_HEADERS
  },
  {
    mode: 'cursor-echoed',
    what: "live answers repeat the client's cursor",
    fault: {
      answer: answers(200, (a, asked) => withHeaders(a, { 'service-cursor': param(asked, 'cursor') }), isLongPoll)
    },
    checks: ['long-poll'],
    finding: 'cursor.not-advanced',
    cause: /Sent cursor=99999999999, the answer's cursor is 99999999999/,
    fix: null
  },
  {
    mode: 'sse-ignored',
    what: 'the service ignores live_sse and long-polls',
    fault: { request: requests(isSse, (asked) => withParams(asked, { live_sse: null })) },
    checks: ['sse'],
    finding: 'sse.unsupported',
    cause: /live_sse=true was answered 200 application\/json/,
    fix: null
  },
  {
    mode: 'sse-gzip',
    what: 'the event stream is gzip-compressed (flushed per frame)',
    fault: {
      stream: {
        head: (headers) => (headers['content-encoding'] = 'gzip'),
        pieces: gzipped
      }
    },
    checks: ['sse'],
    finding: 'sse.compressed',
    cause: /The event stream is sent with content-encoding: gzip/,
    fix: /gzip_types/,
    writes: true
  },
  {
    mode: 'sse-buffered',
    what: 'a proxy holds the event stream for 7 s at a time',
    fault: { stream: { pieces: heldFor(7_000) } },
    checks: ['sse'],
    finding: 'sse.buffered',
    cause: /The change reached the client \d+\.\d s after the request/,
    fix: /proxy_buffering off/,
    writes: true
  },
  {
    mode: 'sse-gzip-bomb',
    what: 'the event stream is a gzip bomb: 260 KB that inflate to 256 MiB without a newline',
    fault: {
      stream: {
        head: (headers) => (headers['content-encoding'] = 'gzip'),
        pieces: () => new Transform({ transform: (_chunk, _encoding, done) => done(null, BOMB) })
      }
    },
    checks: ['sse'],
    finding: 'body.too-large',
    cause: /^The answer to "SSE with nothing new": the stream sent more than 64 MiB; the checker stopped reading it\.$/,
    fix: null,
    also: ['sse.compressed']
  },
  {
    mode: 'keep-alive-stripped',
    what: 'a proxy drops SSE comments; the head and every frame arrive at once',
    fault: { stream: { pieces: framewise((frame) => (frame.startsWith(':') ? null : frame)) } },
    checks: ['sse'],
    finding: 'sse.no-keep-alive',
    cause: /No keep-alive within 25 s, while the change arrived/,
    fix: STRIPPED_SSE_COMMENTS,
    writes: true,
    maxWaitSeconds: 25
  },
  {
    mode: 'sse-outlives-max-age',
    what: 'the event stream says max-age=3 and stays open',
    fault: { stream: { head: (headers) => (headers['cache-control'] = 'public, max-age=3') } },
    checks: ['sse-lifetime'],
    finding: 'sse.outlives-max-age',
    cause: /still open \d+ s after it began, past its max-age of 3 s/,
    fix: null
  },
  {
    mode: 'delete-swallowed',
    what: 'a proxy answers DELETE 202 without passing it on',
    fault: {
      request: requests(
        (asked) => asked.method === 'DELETE',
        () => reply(202, '')
      )
    },
    checks: ['must-refetch'],
    finding: 'refetch.not-invalidated',
    cause: /After DELETE the old handle was answered 200/,
    fix: null,
    writes: true
  },
  {
    mode: 'cache-ignores-cache-buster',
    what: 'a cache keyed without cache-buster and expired_handle',
    fault: {
      cache: {
        key: (asked) => withParams(asked, { 'cache-buster': null, expired_handle: null }).url.href
      }
    },
    checks: ['must-refetch'],
    finding: 'refetch.same-handle',
    cause: /A fresh offset=-1 still gets the deleted handle/,
    fix: /cache key includes the query string/,
    writes: true
  },
  {
    mode: 'delete-forbidden',
    what: 'DELETE is answered 403',
    fault: {
      request: requests(
        (asked) => asked.method === 'DELETE',
        () => reply(403, { message: 'forbidden' })
      )
    },
    checks: ['must-refetch'],
    finding: 'refetch.delete-refused',
    cause: /DELETE was answered 403/,
    fix: null,
    writes: true
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

/** Every fault mode, and one sound one: the proxy passes everything through and every check passes. */
export const FAULTS: readonly FaultCase[] = [...SYNC, ...CACHING, ...LIVE]
