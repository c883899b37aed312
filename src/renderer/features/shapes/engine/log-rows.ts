import { isChangeMessage, isEventMessage, type Message, type Row } from '../../../../shared/shape-client'
import type { LogEntry } from './recorder-index'

export type LogFilter = 'all' | 'insert' | 'update' | 'delete' | 'moves' | 'control'
export const LOG_FILTERS: LogFilter[] = ['all', 'insert', 'update', 'delete', 'moves', 'control']

export type LogKind = 'insert' | 'update' | 'delete' | 'move-in' | 'move-out' | 'event' | 'control'

export type LogDetail =
  | { type: 'diff'; changes: Array<{ column: string; before: string | null; after: string | null }> }
  | { type: 'value'; json: string }
  | {
      type: 'move'
      event: string
      patterns: number
      txids: string | null
      /** Rows a move-out removed here (the server sends no delete for them). */
      removed: number | null
      patternsShort: string
      patternsJson: string
      rest: string | null
    }
  | { type: 'control'; name: string; rest: string | null }

export type LogRow =
  | { seq: number; type: 'note'; at: number; level: 'info' | 'warn' | 'error'; text: string }
  | {
      seq: number
      type: 'message'
      at: number
      offset: string
      kind: LogKind
      /** A subquery shape's move: its event, or a row its move-in query read. */
      move: boolean
      moveIn: boolean
      key: string
      detail: LogDetail
    }

export function kindOf(message: Message): LogKind {
  if (isChangeMessage(message)) return message.headers.operation
  if (!isEventMessage(message)) return 'control'
  const { event } = message.headers
  return event === 'move-in' || event === 'move-out' ? event : 'event'
}

const isMove = (message: Message): boolean =>
  isChangeMessage(message) ? message.headers.is_move_in === true : isEventMessage(message)

export function matchesFilter(entry: LogEntry, filter: LogFilter): boolean {
  if (filter === 'all') return true
  if (entry.type !== 'message') return false
  if (filter === 'moves') return isMove(entry.message)
  const kind = kindOf(entry.message)
  return kind === filter || (filter === 'control' && kind === 'event')
}

/** Whether a Log entry holds the searched text (case-insensitive): its key, values, headers, offset or note. */
export function matchesSearch(entry: LogEntry, needle: string): boolean {
  if (needle === '') return true
  const text = entry.type === 'note' ? entry.text : `${entry.offset ?? ''} ${JSON.stringify(entry.message)}`
  return text.toLowerCase().includes(needle)
}

export interface LogContext {
  before(message: Message): Row | undefined
  movedOut(message: Message): number | undefined
}

function detailOf(message: Message, context: LogContext): LogDetail {
  if (isEventMessage(message)) {
    const { event, patterns = [], txids, ...rest } = message.headers
    return {
      type: 'move',
      event,
      patterns: patterns.length,
      txids: txids ? txids.join(', ') : null,
      removed: event === 'move-out' ? (context.movedOut(message) ?? 0) : null,
      patternsShort: patterns.map((pattern) => `${pattern.pos}:${pattern.value.slice(0, 8)}`).join(' '),
      patternsJson: JSON.stringify(patterns),
      rest: Object.keys(rest).length > 0 ? JSON.stringify(rest) : null
    }
  }
  if (!isChangeMessage(message)) {
    const { control, event, ...rest } = message.headers as Record<string, unknown>
    return {
      type: 'control',
      name: String(control ?? event),
      rest: Object.keys(rest).length > 0 ? JSON.stringify(rest) : null
    }
  }
  const before = context.before(message)
  if (message.headers.operation === 'update' && before) {
    return {
      type: 'diff',
      changes: Object.entries(message.value)
        .filter(([column, value]) => before[column] !== value)
        .map(([column, value]) => ({ column, before: before[column] ?? null, after: value }))
    }
  }
  return { type: 'value', json: JSON.stringify(message.value) }
}

/** A Log entry as the page shows it: what the view needs, worked out where the messages are. */
export function logRow(seq: number, entry: LogEntry, context: LogContext): LogRow {
  if (entry.type === 'note') return { seq, type: 'note', at: entry.at, level: entry.level, text: entry.text }
  const { message } = entry
  return {
    seq,
    type: 'message',
    at: entry.at,
    offset: entry.offset ?? '',
    kind: kindOf(message),
    move: isMove(message),
    moveIn: isChangeMessage(message) && message.headers.is_move_in === true,
    key: isChangeMessage(message) ? message.key : '',
    detail: detailOf(message, context)
  }
}
