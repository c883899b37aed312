import { BOMB, PASS_HEADERS, type FaultCase } from './fault-case'
import {
  answers,
  isCatchUp,
  isInitial,
  isSubset,
  param,
  reply,
  requests,
  withHeaders,
  withMessages,
  withoutControl,
  withParams
} from './fault-edits'

/** The initial sync, offsets, offset=now, etags, handles, parameters and errors. */
export const SYNC_FAULTS: FaultCase[] = [
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
