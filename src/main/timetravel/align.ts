import type { LogAnomaly, LogEntry } from '../../shared/contract/timetravel'
import { compareOffsets } from '../../shared/shape-client/offsets'
import type { ClientStream, ReceivedRecord } from './client-stream'
import { entryOf, ownOffset, type LogRecord } from './log'

/** JSON with object keys sorted: one text per message whatever order a server or proxy wrote its keys in. */
export function canonical(value: unknown, depth = 0): string {
  // a message is a few levels deep; anything deeper (a hostile file) compares as one opaque value
  if (depth > MAX_DEPTH) return '"…"'
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item, depth + 1)).join(',')}]`
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  const keys = Object.keys(value).sort()
  const fields = keys.map(
    (key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key], depth + 1)}`
  )
  return `{${fields.join(',')}}`
}

const MAX_DEPTH = 32

/** "the update of "public"."issues"/"7" at 2412_0 (txid 801)", "the snapshot-end at 0_0"… */
export function describe(entry: LogEntry): string {
  const what =
    entry.kind === 'change'
      ? `the ${entry.moveIn ? 'move-in insert' : entry.operation} of ${entry.key}`
      : entry.kind === 'event'
        ? `the ${entry.name} event`
        : `the ${entry.name} message`
  const txids = entry.txids.length > 0 ? ` (txid ${entry.txids.join(', ')})` : ''
  return `${what} at ${entry.offset}${txids}`
}

/** The indexes of a longest strictly increasing subsequence of `values` (O(n log n)). */
function increasingRun(values: readonly number[]): Set<number> {
  const tails: number[] = []
  const previous = new Array<number>(values.length).fill(-1)
  for (let at = 0; at < values.length; at++) {
    const value = values[at] as number
    let low = 0
    let high = tails.length
    while (low < high) {
      const mid = (low + high) >>> 1
      if ((values[tails[mid] as number] as number) < value) low = mid + 1
      else high = mid
    }
    if (low > 0) previous[at] = tails[low - 1] as number
    tails[low] = at
  }
  const kept = new Set<number>()
  for (let at = tails.at(-1) ?? -1; at !== -1; at = previous[at] as number) kept.add(at)
  return kept
}

/** The log's records at or before `offset`. */
function throughOffset(records: readonly LogRecord[], offset: string): LogRecord[] {
  let count = 0
  while (count < records.length && compareOffsets((records[count] as LogRecord).offset, offset) <= 0) count += 1
  return records.slice(0, count)
}

/**
 * The client's stream against the server's log up to where the stream ended: every message the log has there and the
 * client never got (dropped), got twice (duplicated), got after one the log has after it (reordered), got with other
 * content (altered), or got though the log has no such message (unknown).
 */
export function alignWithLog(stream: ClientStream, log: readonly LogRecord[]): LogAnomaly[] {
  const received = stream.records
  const expected = throughOffset(log, stream.lastOffset)
  const waiting = new Map<string, number[]>()
  expected.forEach((record, index) => {
    const identity = canonical(record.message)
    const queue = waiting.get(identity)
    if (queue) queue.push(index)
    else waiting.set(identity, [index])
  })
  const atOffset = new Map(expected.flatMap((record, index) => (record.exact ? [[record.offset, index] as const] : [])))
  const firstReceipt = new Map<number, ReceivedRecord>()
  const firstByIdentity = new Map<string, number>()
  const matched: Array<{ received: ReceivedRecord; index: number }> = []
  const anomalies: LogAnomaly[] = []
  for (const record of received) {
    if (record.subset) continue
    const identity = canonical(record.message)
    const index = waiting.get(identity)?.shift()
    if (index !== undefined) {
      firstReceipt.set(index, record)
      if (!firstByIdentity.has(identity)) firstByIdentity.set(identity, index)
      matched.push({ received: record, index })
      continue
    }
    const entry = entryOf(record, -1)
    const seen = firstByIdentity.get(identity)
    const same = ownOffset(record.message) ? atOffset.get(record.offset) : undefined
    if (seen !== undefined) {
      const first = firstReceipt.get(seen) as ReceivedRecord
      const requests = [first.request, record.request]
      anomalies.push({
        kind: 'duplicated',
        text: `${describe({ ...entry, index: seen })} arrived twice (request${requests[0] === requests[1] ? ` #${record.request}` : `s #${requests[0]} and #${requests[1]}`})`,
        entry: { ...entry, index: seen },
        requests: [...new Set(requests)]
      })
    } else if (same !== undefined) {
      anomalies.push({
        kind: 'altered',
        text: `${describe(entry)} (request #${record.request}) is not what the log holds at ${record.offset}: ${describe(entryOf(expected[same] as LogRecord, same))}`,
        entry: entryOf(expected[same] as LogRecord, same),
        requests: [record.request]
      })
    } else {
      anomalies.push({
        kind: 'unknown',
        text: `${describe(entry)} came with request #${record.request}, but the log has no such message`,
        entry,
        requests: [record.request]
      })
    }
  }
  return anomalies.concat(reordered(matched, expected), dropped(expected, firstReceipt, stream.ranges))
}

type Match = { received: ReceivedRecord; index: number }

/** For each arrival, the nearest one on the given side whose log position is on the wrong side of its own. */
function nearestOutOfOrder(matched: readonly Match[], side: 'before' | 'after'): Array<Match | undefined> {
  const found = new Array<Match | undefined>(matched.length)
  const stack: Match[] = []
  const order = side === 'before' ? matched.map((_, at) => at) : matched.map((_, at) => matched.length - 1 - at)
  for (const at of order) {
    const current = matched[at] as Match
    const wrong = (other: Match) => (side === 'before' ? other.index > current.index : other.index < current.index)
    while (stack.length > 0 && !wrong(stack.at(-1) as Match)) stack.pop()
    found[at] = stack.at(-1)
    stack.push(current)
  }
  return found
}

function reordered(matched: readonly Match[], log: readonly LogRecord[]): LogAnomaly[] {
  const kept = increasingRun(matched.map(({ index }) => index))
  const earlier = nearestOutOfOrder(matched, 'before')
  const later = nearestOutOfOrder(matched, 'after')
  const describeAt = (match: Match) => describe(entryOf(log[match.index] as LogRecord, match.index))
  return matched.flatMap(({ received, index }, at) => {
    if (kept.has(at)) return []
    const entry = entryOf(log[index] as LogRecord, index)
    const other = earlier[at] ?? later[at]
    const otherRequest =
      other && other.received.request !== received.request ? ` (request #${other.received.request})` : ''
    const relation = earlier[at] ? 'after' : 'before'
    return [
      {
        kind: 'reordered' as const,
        text: other
          ? `${describe(entry)} (request #${received.request}) arrived ${relation} ${describeAt(other)}${otherRequest}, which the log has ${relation === 'after' ? 'after' : 'before'} it`
          : `${describe(entry)} (request #${received.request}) arrived out of the log's order`,
        entry,
        requests: [...new Set([received.request, ...(other ? [other.received.request] : [])])]
      }
    ]
  })
}

function dropped(
  log: readonly LogRecord[],
  receipts: ReadonlyMap<number, ReceivedRecord>,
  ranges: ClientStream['ranges']
): LogAnomaly[] {
  const stretches = [...ranges].sort((a, b) => compareOffsets(a.to, b.to))
  return log.flatMap((record, index) => {
    if (receipts.has(index)) return []
    const entry = entryOf(record, index)
    let low = 0
    let high = stretches.length
    while (low < high) {
      const mid = (low + high) >>> 1
      if (compareOffsets((stretches[mid] as ClientStream['ranges'][number]).to, record.offset) < 0) low = mid + 1
      else high = mid
    }
    const carrier = stretches[low]
    const covered = carrier && compareOffsets(carrier.from, record.offset) < 0
    return [
      {
        kind: 'dropped' as const,
        text: `${describe(entry)} is in the log but never arrived${covered ? ` (request #${carrier.request}, ${carrier.from} → ${carrier.to}, should have brought it)` : ''}`,
        entry,
        requests: covered ? [carrier.request] : []
      }
    ]
  })
}

/** Without the server's log: what the stream shows by itself (a position received twice, or going back). */
export function streamAnomalies(received: readonly ReceivedRecord[]): LogAnomaly[] {
  const seen = new Map<string, ReceivedRecord>()
  const anomalies: LogAnomaly[] = []
  let last: ReceivedRecord | null = null
  received.forEach((record, index) => {
    if (!ownOffset(record.message) || record.subset) return
    const entry: LogEntry = entryOf(record, index)
    const earlier = seen.get(record.offset)
    if (earlier)
      anomalies.push({
        kind: 'duplicated',
        text: `${describe(entry)} arrived twice (requests #${earlier.request} and #${record.request})`,
        entry,
        requests: [earlier.request, record.request]
      })
    else if (last && compareOffsets(record.offset, last.offset) < 0)
      anomalies.push({
        kind: 'reordered',
        text: `${describe(entry)} (request #${record.request}) arrived after ${describe(entryOf(last, index - 1))}, a later position`,
        entry,
        requests: [...new Set([last.request, record.request])]
      })
    seen.set(record.offset, record)
    if (!last || compareOffsets(record.offset, last.offset) > 0) last = record
  })
  return anomalies
}
