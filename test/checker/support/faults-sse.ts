import { Transform } from 'node:stream'
import { BOMB, type FaultCase } from './fault-case'
import { framewise, gzipped, heldFor, isSse, requests, withParams } from './fault-edits'

const STRIPPED_SSE_COMMENTS = /drops SSE comment lines/

/** Event streams. */
export const SSE_FAULTS: FaultCase[] = [
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
    mode: 'keep-alive-stripped-read-only',
    what: 'a proxy drops SSE comments, checked without --write-sql (no change to tell it from buffering)',
    fault: { stream: { pieces: framewise((frame) => (frame.startsWith(':') ? null : frame)) } },
    checks: ['sse'],
    finding: 'sse.no-keep-alive',
    cause:
      /^Nothing arrived on the idle stream in 25 s, not even a keep-alive: its comments are dropped on the way, or the whole stream is held back/,
    fix: STRIPPED_SSE_COMMENTS,
    maxWaitSeconds: 25
  },
  {
    mode: 'sse-held',
    what: 'a proxy holds the event stream for 30 s: neither the change nor a keep-alive arrives in 25 s',
    fault: { stream: { pieces: heldFor(30_000) } },
    checks: ['sse'],
    finding: 'sse.buffered',
    cause: /^Nothing arrived on the stream in 25 s, not even a keep-alive/,
    fix: /proxy_buffering off/,
    also: ['live.change-not-delivered'],
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
  }
]
