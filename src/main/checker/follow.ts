import { headerName } from '../../shared/protocol'
import { isChangeMessage, type Message } from '../../shared/shape-client/messages'
import { compareOffsets } from '../../shared/shape-client/offsets'
import { ShapeSchemaSchema, type ShapeSchema } from '../../shared/shape-client/protocol-headers'
import { Outcome, type CheckContext } from './context'
import {
  controlsOf,
  endsUpToDate,
  expectAnswerFor,
  expectCacheControl,
  expectMessages,
  expectProtocolHeaders
} from './expect'
import { ProbeFailure, type Probe } from './probe'

/** A shape followed from `-1` to up-to-date. */
export interface Synced {
  /** The shape's own parameters (table, where) on top of the target's. */
  params: Record<string, string | null>
  handle: string
  /** The offset of the up-to-date answer: where live requests start. */
  offset: string
  schema: ShapeSchema | null
  probes: Probe[]
  messages: Message[]
}

export interface FollowResult {
  synced: Synced | null
  outcome: Outcome
}

const MAX_REQUESTS = 500

/** Two answers with the same bytes and the same etag (which names the request): one was served for the other's URL. */
const sameAnswer = (a: Probe, b: Probe): boolean =>
  a.headers.get('etag') !== null && a.text === b.text && a.headers.get('etag') === b.headers.get('etag')

/**
 * Initial sync and chunking: `offset=-1`, then each offset the server hands out, until a body ends with up-to-date.
 * Every answer is held to the protocol (headers, body, cache-control of `-1`, offsets moving forward, one handle).
 */
export async function followShape(ctx: CheckContext, params: Record<string, string | null>): Promise<FollowResult> {
  const outcome = new Outcome(ctx.brand)
  const probes: Probe[] = []
  const messages: Message[] = []
  try {
    let probe = await ctx.send({ label: 'initial sync (offset=-1)', params: { ...params, offset: '-1' } })
    probes.push(probe)
    if (probe.status !== 200) {
      outcome.add(
        probe.status >= 500 ? 'errors.server-error' : 'initial.status',
        `offset=-1 was answered ${probe.status}: ${probe.text.slice(0, 200)}`,
        probe
      )
      return { synced: null, outcome }
    }
    if (!expectAnswerFor(outcome, probe, '-1') || !expectProtocolHeaders(ctx, outcome, probe, 'log'))
      return { synced: null, outcome }
    expectCacheControl(outcome, probe, 'initial')
    const handle = ctx.header(probe, 'handle') as string
    const schemaText = ctx.header(probe, 'schema')
    const schema = schemaText ? (ShapeSchemaSchema.safeParse(safeJson(schemaText)).data ?? null) : null
    for (let request = 1; ; request++) {
      const batch = expectMessages(outcome, probe)
      if (!batch) return { synced: null, outcome }
      messages.push(...batch)
      const offset = ctx.header(probe, 'offset') as string
      const upToDate = endsUpToDate(batch)
      if (upToDate !== (ctx.header(probe, 'up-to-date') !== null) && probe !== probes[0]) {
        outcome.add(
          'sync.up-to-date-header',
          upToDate
            ? `The body ends with up-to-date but \`${headerName(ctx.brand, 'up-to-date')}\` is absent.`
            : `\`${headerName(ctx.brand, 'up-to-date')}\` is set on a body that does not end with up-to-date.`,
          probe
        )
      }
      if (upToDate) {
        checkSnapshot(outcome, messages, probes)
        return { synced: { params, handle, offset, schema, probes, messages }, outcome }
      }
      if (request >= MAX_REQUESTS) {
        outcome.add('sync.up-to-date-missing', `No up-to-date after ${MAX_REQUESTS} requests.`, probe)
        return { synced: null, outcome }
      }
      const previous = probe
      probe = await ctx.send({ label: `catch-up (offset=${offset})`, params: { ...params, offset, handle } })
      probes.push(probe)
      if (probe.status !== 200) {
        outcome.add(
          probe.status === 409
            ? 'sync.handle-changed'
            : probe.status >= 500
              ? 'errors.server-error'
              : 'sync.no-progress',
          `Following the offset the server gave (${offset}) was answered ${probe.status}.`,
          previous,
          probe
        )
        return { synced: null, outcome }
      }
      if (!expectAnswerFor(outcome, probe, offset, previous)) return { synced: null, outcome }
      if (sameAnswer(previous, probe)) {
        outcome.add(
          'cache.query-ignored',
          `offset=${offset}&handle=… got the very answer of the previous URL (same body and etag): a cache served it for a different query string.`,
          previous,
          probe
        )
        return { synced: null, outcome }
      }
      if (!expectProtocolHeaders(ctx, outcome, probe, 'log')) return { synced: null, outcome }
      const next = ctx.header(probe, 'offset') as string
      if (ctx.header(probe, 'handle') !== handle) {
        outcome.add(
          'sync.handle-changed',
          `The handle changed from ${handle} to ${ctx.header(probe, 'handle')} without a 409.`,
          previous,
          probe
        )
        return { synced: null, outcome }
      }
      const order = safeCompare(next, offset)
      if (order === null || order < 0) {
        outcome.add(
          'sync.offset-backwards',
          `Asked for offset ${offset}, the answer's offset is ${next}.`,
          previous,
          probe
        )
        return { synced: null, outcome }
      }
      if (order === 0 && sameOffsetWithoutEnd(outcome, probe, offset, previous)) return { synced: null, outcome }
    }
  } catch (error) {
    if (!(error instanceof ProbeFailure)) throw error
    outcome.addFailure(error)
    return { synced: null, outcome }
  }
}

/**
 * An answer that gives the requested offset back without up-to-date: with changes, it hands them out again and the
 * client loops on them; with none, the server is at the end of the log and did not say so (it never sends up-to-date).
 */
function sameOffsetWithoutEnd(outcome: Outcome, probe: Probe, offset: string, previous: Probe): boolean {
  const messages = expectMessages(outcome, probe)
  if (!messages) return true
  if (endsUpToDate(messages)) return false
  const changes = messages.filter(isChangeMessage).length
  if (changes > 0)
    outcome.add(
      'sync.no-progress',
      `Asked for offset ${offset}, the answer gives the same offset back with ${changes} changes and no up-to-date: a client would apply them again and ask again, for ever.`,
      previous,
      probe
    )
  else
    outcome.add(
      'sync.up-to-date-missing',
      `At offset ${offset} the server has nothing more to send (no changes, the same offset back), yet answers without up-to-date: a client never learns it is caught up and asks again, for ever.`,
      previous,
      probe
    )
  return true
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function safeCompare(a: string, b: string): number | null {
  try {
    return compareOffsets(a, b)
  } catch {
    return null
  }
}

/** The snapshot ends with snapshot-end and holds every key once. */
function checkSnapshot(outcome: Outcome, messages: readonly Message[], probes: Probe[]): void {
  const controls = controlsOf(messages)
  const snapshotEnd = messages.findIndex((message) => controlsOf([message])[0] === 'snapshot-end')
  if (!controls.includes('snapshot-end'))
    outcome.add('sync.snapshot-end-missing', 'No snapshot-end control message before up-to-date.', ...probes.slice(-2))
  const seen = new Set<string>()
  for (const message of snapshotEnd === -1 ? messages : messages.slice(0, snapshotEnd)) {
    if (!isChangeMessage(message) || message.headers.operation !== 'insert') continue
    if (seen.has(message.key)) {
      outcome.add('sync.duplicate-key', `The snapshot holds key ${message.key} twice.`, ...probes)
      return
    }
    seen.add(message.key)
  }
}
