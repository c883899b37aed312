import type { Severity } from '../../shared/findings'

interface Rule {
  severity: Severity
  /** What the protocol says; `<brand>` becomes the header brand. */
  rule: string
  /** A section of docs/protocol.md. */
  section: string
  /** The fix when the cause is a known proxy/CDN misconfiguration. */
  fix?: string
}

const BRAND = '#header-brand'
const DECISIONS = '#decisions-where-the-reference-is-inconsistent'
const OFFSETS = '#offsets-and-the-log'
const SUBSETS = '#subset-snapshots'
const INVALIDATION = '#following-postgres'
const LIVE = '#live-requests'
const CACHES = '#caches-and-proxies-in-front'

const PASS_HEADERS =
  'Pass every `<brand>-*` response header through the proxy/CDN: nginx must not `proxy_hide_header` them; a CDN or API gateway that allow-lists headers must list them.'

/**
 * Every finding the checker can report, by id: severity, the rule and where docs/protocol.md states it, and the fix
 * for the known proxy/CDN causes. The sync doctor names its diagnoses from the same catalogue.
 */
export const RULES = {
  'setup.unreachable': { severity: 'error', rule: 'The shape endpoint answers HTTP requests.', section: OFFSETS },
  'headers.missing': {
    severity: 'error',
    rule: 'Every 200 of the shape log carries `<brand>-handle` and `<brand>-offset`, plus `<brand>-schema` outside live mode and `<brand>-cursor` in live mode; clients stop with a protocol error without them.',
    section: BRAND,
    fix: PASS_HEADERS
  },
  'headers.brand-mismatch': {
    severity: 'error',
    rule: 'The protocol headers are named `<brand>-*`; a client reading one brand cannot read the other.',
    section: BRAND,
    fix: 'Check with the brand the server speaks (`--header-brand`), and start the server with the brand your client reads (`@electric-sql/client` reads `electric-*`).'
  },
  'initial.status': {
    severity: 'error',
    rule: '`GET offset=-1` answers 200 with a JSON array of messages: the first chunk of the shape log.',
    section: OFFSETS
  },
  'initial.body': {
    severity: 'error',
    rule: 'A shape log response is a JSON array of change and control messages (`content-type: application/json`).',
    section: OFFSETS
  },
  'body.too-large': {
    severity: 'error',
    rule: 'A response body stays within a few MB: the log comes in chunks (the reference closes one at 10 MB), and a compressed body inflates to one chunk, not more. The checker reads 64 MiB of a body at most.',
    section: OFFSETS
  },
  'sync.no-progress': {
    severity: 'error',
    rule: 'Each non-live response moves the offset past the requested one until the body ends with `up-to-date`.',
    section: OFFSETS
  },
  'sync.offset-backwards': {
    severity: 'error',
    rule: 'Offsets only move forward; a response never sends a client back before the offset it asked for.',
    section: OFFSETS
  },
  'sync.handle-changed': {
    severity: 'error',
    rule: 'A handle stays the same while a client follows it; a shape that is replaced answers 409 must-refetch.',
    section: INVALIDATION
  },
  'sync.up-to-date-missing': {
    severity: 'error',
    rule: 'Following the offsets from `-1` ends with a body whose last message is the `up-to-date` control message.',
    section: OFFSETS
  },
  'sync.up-to-date-header': {
    severity: 'warning',
    rule: 'A body that ends with `up-to-date` carries the `<brand>-up-to-date` header, and only such a body does.',
    section: DECISIONS,
    fix: PASS_HEADERS
  },
  'sync.snapshot-end-missing': {
    severity: 'warning',
    rule: 'The last snapshot chunk ends with a `snapshot-end` control message (xmin, xmax, xip_list).',
    section: OFFSETS
  },
  'sync.duplicate-key': {
    severity: 'error',
    rule: 'The snapshot holds each row once: one insert per key.',
    section: OFFSETS
  },
  'sync.bad-message': {
    severity: 'error',
    rule: 'Change messages carry `key`, `value` (column → text or null) and `headers.operation`; control messages `headers.control`.',
    section: OFFSETS
  },
  'now.unsupported': {
    severity: 'error',
    rule: '`offset=now` answers at once: 200 with only an `up-to-date` message, the handle and the latest offset.',
    section: OFFSETS
  },
  'now.ignored': {
    severity: 'error',
    rule: '`offset=now` skips the log: the answer holds only `up-to-date` and the latest offset, never the rows from the start (`offset=-1`).',
    section: OFFSETS
  },
  'etag.missing': {
    severity: 'warning',
    rule: 'Shape log responses carry an `etag` (`"<handle>:<requested offset>:<response offset>"`).',
    section: DECISIONS,
    fix: PASS_HEADERS.replace('`<brand>-*` response header', '`etag` header')
  },
  'etag.not-honoured': {
    severity: 'warning',
    rule: 'A request whose `If-None-Match` names the current etag is answered 304 with no body.',
    section: DECISIONS
  },
  'handles.no-conflict': {
    severity: 'error',
    rule: 'A continuation with a handle that is unknown, gone or of another shape is answered 409 with a must-refetch body.',
    section: INVALIDATION
  },
  'handles.conflict-body': {
    severity: 'error',
    rule: 'The 409 body is `[{"headers":{"control":"must-refetch"}}]`.',
    section: DECISIONS
  },
  'handles.conflict-no-handle': {
    severity: 'warning',
    rule: 'A 409 carries the replacement shape in `<brand>-handle`, so the client goes on at once.',
    section: DECISIONS,
    fix: PASS_HEADERS
  },
  'params.not-validated': {
    severity: 'error',
    rule: 'Invalid parameters are answered 400 with a JSON body naming the problem (validation order and messages of the reference).',
    section: DECISIONS
  },
  'errors.server-error': {
    severity: 'error',
    rule: 'A mistake of the caller is a 4xx; a 5xx means the server failed.',
    section: DECISIONS
  },
  'errors.not-json': {
    severity: 'warning',
    rule: 'Every error body is JSON (`{"message": …, "errors": …}`).',
    section: DECISIONS
  },
  'cache.initial': {
    severity: 'warning',
    rule: 'The `offset=-1` answer is cacheable by shared caches (`public, max-age=604800, s-maxage=3600, …`): that is how a CDN serves initial syncs.',
    section: DECISIONS
  },
  'cache.error-cacheable': {
    severity: 'error',
    rule: 'Error responses (4xx but 409, 5xx) are `no-store`: a cached error would be served to every client.',
    section: DECISIONS,
    fix: "Do not cache error statuses at the proxy/CDN (nginx: no `proxy_cache_valid any …`; keep the origin's `no-store`)."
  },
  'cache.conflict-cacheable': {
    severity: 'error',
    rule: 'A 409 is `max-age=60, must-revalidate` at most (1 s without a new handle): a must-refetch cached longer sends clients into a re-sync loop.',
    section: DECISIONS
  },
  'cache.live-too-long': {
    severity: 'error',
    rule: 'A live answer is fresh for 5 s plus 5 s stale-while-revalidate, well inside the 20 s cursor window, so no client is handed an old live answer.',
    section: LIVE
  },
  'cache.subset-cacheable': {
    severity: 'error',
    rule: 'Subset snapshots are `no-cache`: each request is a new snapshot with its own metadata.',
    section: SUBSETS
  },
  'cache.sse-max-age': {
    severity: 'warning',
    rule: 'An SSE response carries `max-age` (59 s) so a CDN can collapse identical streams, and ends before it.',
    section: DECISIONS
  },
  'cache.query-ignored': {
    severity: 'error',
    rule: 'Responses differ by query string (offset, handle, cursor, table, where): a cache keys on the whole URL.',
    section: CACHES,
    fix: 'The cache key leaves out the query string. nginx: `proxy_cache_key $scheme$proxy_host$request_uri;` (the default), never `$uri` alone; a CDN: include the whole query string in the cache key.'
  },
  'cache.cache-control-ignored': {
    severity: 'error',
    rule: "Caches follow the origin's `cache-control`: `no-cache` and `no-store` answers are not reused, `max-age` is not stretched.",
    section: CACHES,
    fix: "The cache overrides the origin's cache-control. nginx: remove `proxy_ignore_headers Cache-Control` (with it, `proxy_cache_valid` applies to every answer); a CDN: respect origin cache-control on the shape path instead of a fixed edge TTL."
  },
  'cache.vary-ignored': {
    severity: 'error',
    rule: "Responses vary by `Origin` (`Vary: Origin`): a cache keeps one origin's CORS answer from another.",
    section: CACHES,
    fix: 'The cache ignores `Vary`. nginx: remove `Vary` from `proxy_ignore_headers`; a CDN: add the Origin to the cache key, or answer CORS at the edge.'
  },
  'cors.vary-missing': {
    severity: 'warning',
    rule: 'A response that echoes the `Origin` in `access-control-allow-origin` says `Vary: Origin`.',
    section: DECISIONS,
    fix: 'Add `Vary: Origin` where the Origin is echoed (nginx: `add_header Vary Origin always;`).'
  },
  'cors.expose-missing': {
    severity: 'error',
    rule: '`access-control-expose-headers` lists the protocol headers (`<brand>-handle`, `-offset`, `-schema`, `-cursor`, `-up-to-date`); a browser client cannot read them otherwise.',
    section: CACHES,
    fix: "Pass the origin's `access-control-expose-headers` through, or set it at the proxy listing every `<brand>-*` header the client reads."
  },
  'cors.preflight': {
    severity: 'warning',
    rule: '`OPTIONS` answers a CORS preflight (204) with the allowed methods.',
    section: DECISIONS
  },
  'live.never-answers': {
    severity: 'error',
    rule: 'A long-poll is answered within the long-poll timeout (20 s); the client gives up after 45 s.',
    section: LIVE,
    fix: 'A proxy timeout below the long-poll timeout, or buffering, holds the answer: nginx `proxy_read_timeout` above 20 s.'
  },
  'live.not-held': {
    severity: 'warning',
    rule: 'A live request with nothing new is held until news or the long-poll timeout, not answered at once.',
    section: LIVE
  },
  'live.timeout-answer': {
    severity: 'error',
    rule: 'A long-poll that times out is answered 200 with only `up-to-date`, the same offset and a `<brand>-cursor`.',
    section: LIVE
  },
  'live.change-not-delivered': {
    severity: 'error',
    rule: 'A change committed while a long-poll waits is delivered in its answer, followed by `up-to-date`.',
    section: LIVE
  },
  'cursor.missing': {
    severity: 'error',
    rule: 'Every live answer carries `<brand>-cursor`.',
    section: LIVE,
    fix: PASS_HEADERS
  },
  'cursor.not-advanced': {
    severity: 'error',
    rule: 'The cursor of a live answer is past the cursor the client sent, so its next live URL is new and no cache hands it an old answer.',
    section: LIVE
  },
  'sse.unsupported': {
    severity: 'warning',
    rule: '`live=true&live_sse=true` is answered with `text/event-stream`; clients fall back to long-polling otherwise.',
    section: LIVE
  },
  'sse.compressed': {
    severity: 'error',
    rule: 'SSE is streamed as it is written; compression holds frames back until a compression buffer fills.',
    section: CACHES,
    fix: 'Do not compress `text/event-stream`. nginx: take it out of `gzip_types` (or `gzip off` on the shape path); a CDN: turn off compression for event streams.'
  },
  'sse.buffered': {
    severity: 'error',
    rule: 'SSE frames reach the client when the server writes them; a proxy must not buffer the stream.',
    section: CACHES,
    fix: 'The proxy buffers the stream. nginx: `proxy_buffering off;` on the shape path and do not `proxy_ignore_headers X-Accel-Buffering`; Caddy: `flush_interval -1`; a CDN: enable streaming for `text/event-stream`.'
  },
  'sse.no-keep-alive': {
    severity: 'warning',
    rule: 'An idle SSE stream sends the comment `: keep-alive` every 21 s.',
    section: LIVE,
    fix: 'If the origin sends them (`curl -N` on it shows `: keep-alive` every 21 s), something in front drops SSE comment lines: a proxy, CDN or gateway that parses or rewrites `text/event-stream` must pass `:` lines through, or idle streams hit its idle timeout.'
  },
  'sse.outlives-max-age': {
    severity: 'error',
    rule: 'An SSE stream ends before its `max-age` (58 s of 59): a cache collapsing streams never hands out one that has gone stale.',
    section: DECISIONS
  },
  'refetch.not-invalidated': {
    severity: 'error',
    rule: 'After `DELETE /v1/shape` the old handle is gone: its next request is answered 409 must-refetch.',
    section: INVALIDATION
  },
  'refetch.same-handle': {
    severity: 'error',
    rule: 'After a must-refetch, a fresh `offset=-1` (with a cache buster) gets the new handle, never the deleted one.',
    section: INVALIDATION,
    fix: 'A cache hands out the deleted shape: make sure the cache key includes the query string (the client adds `cache-buster` and `expired_handle`).'
  },
  'refetch.delete-refused': {
    severity: 'warning',
    rule: '`DELETE /v1/shape?table=…&handle=…` drops the shape (202).',
    section: DECISIONS
  },
  'subset.post': {
    severity: 'error',
    rule: '`POST /v1/shape` with a subset body answers 200 `{"metadata": {xmin, xmax, xip_list, …}, "data": [inserts]}`.',
    section: SUBSETS
  },
  'subset.get': {
    severity: 'error',
    rule: 'The legacy `GET` with `subset__*` parameters answers the same as the POST.',
    section: SUBSETS
  }
} satisfies Record<string, Rule>

export type FindingId = keyof typeof RULES
