import type { Severity } from '../../shared/findings'
import { RULES } from '../checker/rules'

interface DoctorRule {
  severity: Severity
  /** What the protocol says; `<brand>` becomes the header brand. */
  rule: string
  /** A section of docs/protocol.md. */
  section: string
  /** The fix, when the cause is known. */
  fix: string | null
}

const LIVE = '#live-requests'
const CACHES = '#caches-and-proxies-in-front'
const OFFSETS = '#offsets-and-the-log'
const INVALIDATION = '#following-postgres'
const SSE = '#sse'

const CACHE_KEY_FIX = RULES['cache.query-ignored'].fix
const CACHE_CONTROL_FIX = RULES['cache.cache-control-ignored'].fix

/** Every diagnosis the sync doctor can make, by id: the rule it rests on (with its section) and the known fix. */
export const DOCTOR_RULES = {
  'doctor.refetch-loop': {
    severity: 'error',
    rule: 'A must-refetch (409) sends the client back to `offset=-1` once, for a shape that was replaced; the fresh sync gets the new handle and goes on from there.',
    section: INVALIDATION,
    fix: null
  },
  'doctor.cached-conflict': {
    severity: 'error',
    rule: 'A 409 is `max-age=60, must-revalidate` at most (1 s without a new handle): a cache that keeps it longer hands the same must-refetch to every client that asks for that URL again.',
    section: '#decisions-where-the-reference-is-inconsistent',
    fix: `Do not let the cache keep 409 answers longer than the origin says. nginx: no \`proxy_cache_valid any …\` or \`proxy_cache_valid 409 …\`, no \`proxy_ignore_headers Cache-Control\`; a CDN: respect the origin's cache-control on the shape path.`
  },
  'doctor.stale-handle': {
    severity: 'error',
    rule: 'After a must-refetch, the fresh `offset=-1` request (with its `cache-buster`) is answered with the new handle, never the one that was just refused.',
    section: INVALIDATION,
    fix: CACHE_KEY_FIX
  },
  'doctor.stale-live': {
    severity: 'error',
    rule: 'A live answer is fresh for 5 s plus 5 s stale-while-revalidate and carries a cursor past the one the client sent, so the next live URL is new and no cache hands the client an old answer.',
    section: LIVE,
    fix: CACHE_CONTROL_FIX
  },
  'doctor.live-cut': {
    severity: 'error',
    rule: 'A long-poll is answered by the server within its timeout (20 s); nothing in between may cut it sooner.',
    section: LIVE,
    fix: RULES['live.never-answers'].fix
  },
  'doctor.sse-buffered': {
    severity: 'error',
    rule: 'An SSE response head goes out at once and each frame when it is written; a stream held back makes the client give up on SSE after three short connections and long-poll instead.',
    section: SSE,
    fix: RULES['sse.buffered'].fix
  },
  'doctor.sse-compressed': {
    severity: 'error',
    rule: RULES['sse.compressed'].rule,
    section: CACHES,
    fix: RULES['sse.compressed'].fix
  },
  'doctor.duplicate-messages': {
    severity: 'error',
    rule: 'A client reads each part of a shape log once: each request continues at the offset of the previous answer, and the log holds one insert per key until it is deleted.',
    section: OFFSETS,
    fix: null
  },
  'doctor.missing-messages': {
    severity: 'error',
    rule: 'A client reads the whole log: each request continues at the offset the previous answer gave, and every update or delete follows the insert of its key.',
    section: OFFSETS,
    fix: null
  },
  'doctor.offset-backwards': {
    severity: 'error',
    rule: RULES['sync.offset-backwards'].rule,
    section: OFFSETS,
    fix: null
  },
  'doctor.up-to-date-never': {
    severity: 'error',
    rule: RULES['sync.up-to-date-missing'].rule,
    section: OFFSETS,
    fix: null
  },
  'doctor.headers-missing': {
    severity: 'error',
    rule: RULES['headers.missing'].rule,
    section: '#header-brand',
    fix: RULES['headers.missing'].fix
  },
  'doctor.cached-error': {
    severity: 'error',
    rule: RULES['cache.error-cacheable'].rule,
    section: '#decisions-where-the-reference-is-inconsistent',
    fix: RULES['cache.error-cacheable'].fix
  }
} satisfies Record<string, DoctorRule>

export type DoctorFindingId = keyof typeof DOCTOR_RULES
