import { PASS_HEADERS, type FaultCase } from './fault-case'
import type { Answer } from './fault-proxy'
import {
  answers,
  isChange,
  isLongPoll,
  param,
  reply,
  requests,
  withHeaders,
  withMessages,
  withParams
} from './fault-edits'

const live = (answer: Answer) => answer.headers['service-cursor'] !== undefined

/** Long-polls, cursors and must-refetch. */
export const LIVE_FAULTS: FaultCase[] = [
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
    what: 'long-polls are answered at once: up-to-date, the same offset, a new cursor',
    fault: {
      // answered here, not by the server: at once even on a loaded machine
      request: requests(isLongPoll, (asked) =>
        reply(200, [{ headers: { control: 'up-to-date' } }], {
          'cache-control': 'public, max-age=5, stale-while-revalidate=5',
          'service-handle': param(asked, 'handle') ?? '',
          'service-offset': param(asked, 'offset') ?? '',
          'service-cursor': '199999999999',
          'service-up-to-date': ''
        })
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
  }
]
