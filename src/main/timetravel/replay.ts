import type { LogEntry, RowDiff, RowOrigin, RowsAt, ShapeDiff, ShapeRow } from '../../shared/contract/timetravel'
import { compareOffsets } from '../../shared/shape-client/offsets'
import { MaterialisedShape, type RowChange } from '../../shared/shape-client/materialise'
import { isChangeMessage, type Message, type Row } from '../../shared/shape-client/messages'
import { countThrough, entryOf, TimeTravelInputError, type LogRecord, type ReadLog } from './log'

/** A point of a log: a position, or a count of messages. */
export type Point = { offset: string } | { count: number }

/** The rows a stream of messages makes, as the shared shape client materialises them, and what made each row. */
export class Replay {
  readonly shape: MaterialisedShape
  /** Each present row's messages, oldest first: the insert that brought it, then its updates. */
  readonly origins = new Map<string, RowOrigin[]>()
  /** Rows that left, with the message that took them out (the last one, for a key that left twice). */
  readonly removals = new Map<string, RowOrigin>()
  applied = 0

  constructor(log: 'full' | 'changes_only') {
    this.shape = new MaterialisedShape({ log })
  }

  /** Applies records one at a time (so each change is known by its message); returns what each did. */
  apply(records: readonly LogRecord[], firstIndex = this.applied): Array<{ index: number; change: RowChange }> {
    const done: Array<{ index: number; change: RowChange }> = []
    records.forEach((record, at) => {
      const index = firstIndex + at
      for (const change of this.shape.apply([record.message])) {
        this.remember(change, record, index)
        done.push({ index, change })
      }
    })
    this.applied = firstIndex + records.length
    return done
  }

  private remember(change: RowChange, record: LogRecord, index: number): void {
    if (change.kind === 'reset') {
      this.origins.clear()
      return
    }
    const origin = originOf(change, record, index)
    if (change.kind === 'insert') this.origins.set(change.key, [origin])
    else if (change.kind === 'update') {
      const origins = this.origins.get(change.key)
      if (origins) origins.push(origin)
      else this.origins.set(change.key, [origin])
    } else {
      this.origins.delete(change.key)
      this.removals.set(change.key, origin)
    }
  }

  /** The rows in log order from the `start`th, at most `limit` of them. */
  rows(limit = Infinity, start = 0): ShapeRow[] {
    const rows: ShapeRow[] = []
    let skipped = 0
    for (const [key, value] of this.shape.rows) {
      if (rows.length >= limit) break
      if (skipped++ < start) continue
      const origins = this.origins.get(key) ?? []
      rows.push({ key, value, origins: listedOrigins(origins), originCount: origins.length })
    }
    return rows
  }
}

/**
 * A replay kept between calls on one log (the scrubber asks for point after point): a later point applies only the
 * messages between; an earlier one replays from the start.
 */
export class ReplayCursor {
  private replay: Replay | null = null

  constructor(private readonly log: ReadLog) {}

  at(count: number): Replay {
    if (!this.replay || this.replay.applied > count) this.replay = new Replay(this.log.definition.log)
    if (count > this.replay.applied) this.replay.apply(this.log.records.slice(this.replay.applied, count))
    return this.replay
  }
}

/** Messages listed per row at most: a row updated a million times would make a window of rows megabytes long. */
const LISTED_ORIGINS = 100

/** The insert (or move-in) that brought a row and its latest changes. */
const listedOrigins = (origins: RowOrigin[]): RowOrigin[] =>
  origins.length <= LISTED_ORIGINS ? origins : [origins[0] as RowOrigin, ...origins.slice(1 - LISTED_ORIGINS)]

const txidsOf = (message: Message): number[] => entryOf({ offset: '', exact: true, message }, 0).txids

function originOf(change: Exclude<RowChange, { kind: 'reset' }>, record: LogRecord, index: number): RowOrigin {
  const base = { index, offset: record.offset, txids: txidsOf(record.message) }
  if (change.kind === 'insert') {
    const moveIn = isChangeMessage(record.message) && record.message.headers.is_move_in === true
    return { ...base, operation: moveIn ? 'move-in' : 'insert', columns: Object.keys(change.row) }
  }
  if (change.kind === 'update') return { ...base, operation: 'update', columns: change.changed }
  return { ...base, operation: isChangeMessage(record.message) ? 'delete' : 'move-out', columns: [] }
}

/** How many of the log's records a point takes. */
export function countAt(log: ReadLog, point: Point): number {
  if ('offset' in point) return countThrough(log, point.offset)
  if (point.count > log.records.length)
    throw new TimeTravelInputError(`the log has ${log.records.length} messages, not ${point.count}`)
  return point.count
}

const pointLabel = (log: ReadLog, point: Point, count: number): string =>
  'offset' in point ? point.offset : count === 0 ? '-1' : (log.records[count - 1] as LogRecord).offset

/** A replay of the first `count` records. */
export function replayThrough(log: ReadLog, count: number): Replay {
  const replay = new Replay(log.definition.log)
  replay.apply(log.records.slice(0, count), 0)
  return replay
}

/**
 * The shape at a point of its log: its rows (`limit` of them from the `start`th, in log order), each with the messages
 * that made it what it is there. A cursor kept on the log saves replaying it whole for each point.
 */
export function rowsAt(
  log: ReadLog,
  point: Point,
  window: { limit?: number; start?: number; cursor?: ReplayCursor } = {}
): RowsAt {
  const count = countAt(log, point)
  const replay = window.cursor ? window.cursor.at(count) : replayThrough(log, count)
  const offset = pointLabel(log, point, count)
  const start = window.start ?? 0
  return {
    offset,
    count,
    last: count === 0 ? null : entryOf(log.records[count - 1] as LogRecord, count - 1),
    uncertain: 'offset' in point ? uncertainAround(log, count, offset) : [],
    rowCount: replay.shape.rows.size,
    start,
    rows: replay.rows(window.limit ?? Infinity, start)
  }
}

/** Inexact records after the point whose place may yet be at or before it (see LogEntry.after). */
function uncertainAround(log: ReadLog, count: number, offset: string): LogEntry[] {
  const uncertain: LogEntry[] = []
  for (let index = count; index < log.records.length; index++) {
    const record = log.records[index] as LogRecord
    if (record.exact || record.after === undefined || compareOffsets(record.after, offset) >= 0) break
    uncertain.push(entryOf(record, index))
  }
  return uncertain
}

const sameRow = (a: Row, b: Row): boolean => columnsDiffering(a, b).length === 0

/** Columns whose values differ between two rows (a column one of them lacks counts). */
export function columnsDiffering(a: Row, b: Row): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((column) => a[column] !== b[column])
}

/** What changed between two points of a log (in either order): rows added, removed and changed, with their messages. */
export function diffBetween(log: ReadLog, from: Point, to: Point, limit = Infinity): ShapeDiff {
  const fromCount = countAt(log, from)
  const toCount = countAt(log, to)
  const [low, high] = fromCount <= toCount ? [fromCount, toCount] : [toCount, fromCount]
  const replay = replayThrough(log, low)
  const start = new Map(replay.shape.rows)
  const touched = new Map<string, RowOrigin[]>()
  for (const { index, change } of replay.apply(log.records.slice(low, high), low)) {
    if (change.kind === 'reset') continue
    const origin = originOf(change, log.records[index] as LogRecord, index)
    const messages = touched.get(change.key)
    if (messages) messages.push(origin)
    else touched.set(change.key, [origin])
  }
  const [before, after] = fromCount <= toCount ? [start, replay.shape.rows] : [replay.shape.rows, start]
  const changes: RowDiff[] = []
  for (const [key, messages] of touched) {
    const old = before.get(key) ?? null
    const now = after.get(key) ?? null
    if (old && now && sameRow(old, now)) continue
    if (!old && !now) continue
    const kind = !old ? 'added' : !now ? 'removed' : 'changed'
    const columns = old && now ? columnsDiffering(old, now) : Object.keys(old ?? now ?? {})
    changes.push({ key, kind, before: old, after: now, columns, messages })
  }
  return {
    from: pointLabel(log, from, fromCount),
    to: pointLabel(log, to, toCount),
    fromCount,
    toCount,
    changeCount: changes.length,
    changes: changes.slice(0, limit)
  }
}
