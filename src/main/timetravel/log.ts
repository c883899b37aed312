import type { LogEntry, LogSourceKind, ShapeDefinition } from '../../shared/contract/timetravel'
import { CONTROL } from '../../shared/protocol'
import { isChangeMessage, isControlMessage, isEventMessage, type Message } from '../../shared/shape-client/messages'
import { compareOffsets } from '../../shared/shape-client/offsets'

/**
 * Input the time-travel commands cannot use: a file that is not a recording or a bundle, an offset outside the log, a
 * shape service that refuses the shape… The message is one line naming it (the CLI exits 2, the contract answers 400).
 */
export class TimeTravelInputError extends Error {
  override readonly name = 'TimeTravelInputError'
}

/** Messages a log holds at most, whatever it is read from. */
export const MAX_LOG_MESSAGES = 1_000_000
/** Bytes of a shape's files (snapshot chunks and log) read at most. */
export const MAX_LOG_BYTES = 1024 * 1024 * 1024

/** One message of a shape log and its position (see LogEntry.exact). */
export interface LogRecord {
  offset: string
  exact: boolean
  message: Message
  /** An inexact record lies after this position (and at or before `offset`). */
  after?: string
}

/** A shape's log as read, in order, from its files, from a shape service, or from a bundle. */
export interface ReadLog {
  source: { kind: LogSourceKind; description: string }
  /** The shape endpoint with the definition's parameters, credentials masked; null when read from files alone. */
  url: string | null
  definition: ShapeDefinition
  handle: string | null
  server: string | null
  records: LogRecord[]
  /** The last position read; the log's end when `complete`. */
  end: string
  complete: boolean
  notes: string[]
}

const txidsOf = (message: Message): number[] => {
  const txids = (message.headers as { txids?: unknown }).txids
  return Array.isArray(txids) ? txids.filter((txid): txid is number => typeof txid === 'number') : []
}

/** A record as the contract lists it. */
export function entryOf(record: LogRecord, index: number): LogEntry {
  const { message } = record
  const base = {
    index,
    offset: record.offset,
    exact: record.exact,
    after: record.exact ? null : (record.after ?? null),
    txids: txidsOf(message)
  }
  if (isChangeMessage(message))
    return {
      ...base,
      kind: 'change',
      operation: message.headers.operation,
      key: message.key,
      name: null,
      moveIn: message.headers.is_move_in === true
    }
  const name = isEventMessage(message)
    ? message.headers.event
    : String((message.headers as { control?: unknown }).control ?? '')
  return {
    ...base,
    kind: isEventMessage(message) ? 'event' : 'control',
    operation: null,
    key: null,
    name,
    moveIn: false
  }
}

/** `<lsn>_<op_position>` of a live change, when the message says it. */
export function ownOffset(message: Message): string | null {
  const { lsn, op_position: position } = message.headers as { lsn?: unknown; op_position?: unknown }
  return typeof lsn === 'string' && /^\d+$/.test(lsn) && typeof position === 'number' ? `${lsn}_${position}` : null
}

/** A log offset as given (`-1`, `0_0`, `0_inf`, `<lsn>_<op>`); TimeTravelInputError when it is not one. */
export function checkOffset(offset: string): string {
  if (offset === '-1' || /^\d{1,20}_(\d{1,15}|inf)$/.test(offset)) return offset
  throw new TimeTravelInputError(
    `${JSON.stringify(offset.slice(0, 60))} is not a log offset: -1, 0_0, 0_inf or <lsn>_<op>`
  )
}

/**
 * How many records of the log lie at or before `offset`. `-1` is before the first; a position past what was read is
 * outside the log (TimeTravelInputError naming its end).
 */
export function countThrough(log: ReadLog, offset: string): number {
  if (checkOffset(offset) === '-1') return 0
  if (log.complete && compareOffsets(offset, log.end) > 0)
    throw new TimeTravelInputError(`offset ${offset} is outside the log: it ends at ${log.end}`)
  let low = 0
  let high = log.records.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (compareOffsets((log.records[mid] as LogRecord).offset, offset) <= 0) low = mid + 1
    else high = mid
  }
  return low
}

/**
 * Positions of a response's messages, read after `start` up to `end`: a message's own (`<lsn>_<op_position>`) where
 * it has one; otherwise (a snapshot chunk's rows, move-in rows, events) it lies after the previous own position (or
 * `start`) and at or before the next one (or `end`), which is the position given it.
 */
export function positioned(messages: readonly Message[], start: string, end: string): LogRecord[] {
  const owns = messages.map(ownOffset)
  const records: LogRecord[] = []
  let next = end
  for (let index = messages.length - 1; index >= 0; index--) {
    const own = owns[index] ?? null
    if (own) next = own
    records.push({ offset: own ?? next, exact: own !== null, message: messages[index] as Message })
  }
  records.reverse()
  let previous = start
  for (const record of records) {
    if (!record.exact) record.after = previous
    else previous = record.offset
  }
  return records
}

export const isUpToDate = (message: Message): boolean =>
  isControlMessage(message) && message.headers.control === CONTROL.upToDate
