import type { ShapeDefinition } from './definition'
import { keyPrefix } from './row-sql'
import type { TableInfo } from './table-info'

export type Row = Readonly<Record<string, string | null>>

/** One row operation of a committed transaction, as the router sees it. */
export type RowChange =
  | { kind: 'insert'; new: Row }
  | { kind: 'update'; old: Row; new: Row }
  | { kind: 'delete'; old: Row }

export interface TransactionContext {
  xid: number
  lsn: bigint
}

export interface ShapeMessage {
  op: number
  message: { headers: Record<string, unknown>; key: string; value: Record<string, string | null>; old_value?: Record<string, string | null> }
}

/** `"schema"."table"/"pk1"/"pk2"`: `/` in values doubled, NULL (tables without a key) as a bare `_`. */
export function rowKey(table: TableInfo, row: Row): string {
  const parts = table.keyColumns.map((name) => {
    const value = row[name]
    return value === null || value === undefined ? '_' : `"${value.replaceAll('/', '//')}"`
  })
  return `${keyPrefix(table)}/${parts.join('/')}`
}

/**
 * Live values come from pgoutput, where booleans are `t`/`f`; snapshots format them as `true`/`false`.
 * We send `true`/`false` everywhere (see docs/protocol.md).
 */
function liveValue(table: TableInfo, name: string, value: string | null): string | null {
  if (value === null) return null
  const column = table.columns.find((candidate) => candidate.name === name)
  if (column?.type === 'bool' && !column.isArray) return value === 't' ? 'true' : value === 'f' ? 'false' : value
  return value
}

function pick(definition: ShapeDefinition, row: Row, names: readonly string[]): Record<string, string | null> {
  const value: Record<string, string | null> = {}
  for (const name of names) Object.defineProperty(value, name, { value: liveValue(definition.table, name, row[name] ?? null), enumerable: true })
  return value
}

function headers(definition: ShapeDefinition, operation: string, tx: TransactionContext, op: number): Record<string, unknown> {
  return { operation, relation: [definition.table.schema, definition.table.name], txids: [tx.xid], lsn: tx.lsn.toString(), op_position: op }
}

function keyColumnsOf(definition: ShapeDefinition): string[] {
  return definition.table.hasPrimaryKey ? definition.table.keyColumns : definition.columns
}

function insertMessage(definition: ShapeDefinition, row: Row, tx: TransactionContext, op: number): ShapeMessage {
  return { op, message: { headers: headers(definition, 'insert', tx, op), key: rowKey(definition.table, row), value: pick(definition, row, definition.columns) } }
}

function deleteMessage(definition: ShapeDefinition, row: Row, tx: TransactionContext, op: number): ShapeMessage {
  const columns = definition.replica === 'full' ? definition.columns : keyColumnsOf(definition)
  return { op, message: { headers: headers(definition, 'delete', tx, op), key: rowKey(definition.table, row), value: pick(definition, row, columns) } }
}

function updateMessages(definition: ShapeDefinition, change: { old: Row; new: Row }, tx: TransactionContext, op: number): ShapeMessage[] {
  const oldKey = rowKey(definition.table, change.old)
  const newKey = rowKey(definition.table, change.new)
  if (oldKey !== newKey) {
    const removal = deleteMessage(definition, change.old, tx, op)
    const addition = insertMessage(definition, change.new, tx, op + 1)
    removal.message.headers.key_change_to = newKey
    addition.message.headers.key_change_from = oldKey
    return [removal, addition]
  }
  const changed = definition.columns.filter((name) => change.old[name] !== change.new[name])
  if (changed.length === 0) return []
  const full = definition.replica === 'full'
  const columns = full ? definition.columns : [...keyColumnsOf(definition).filter((name) => !changed.includes(name)), ...changed]
  const message: ShapeMessage['message'] = { headers: headers(definition, 'update', tx, op), key: newKey, value: pick(definition, change.new, columns) }
  if (full) message.old_value = pick(definition, change.old, changed)
  return [{ op, message }]
}

/**
 * What one row change means for one shape, given whether the old and new row versions match its where:
 * moves into the where become inserts, moves out deletes, PK changes a delete + insert pair.
 */
export function messagesFor(definition: ShapeDefinition, change: RowChange, matches: { old: boolean; new: boolean }, tx: TransactionContext, op: number): ShapeMessage[] {
  switch (change.kind) {
    case 'insert':
      return matches.new ? [insertMessage(definition, change.new, tx, op)] : []
    case 'delete':
      return matches.old ? [deleteMessage(definition, change.old, tx, op)] : []
    case 'update':
      if (matches.old && matches.new) return updateMessages(definition, change, tx, op)
      if (matches.old) return [deleteMessage(definition, change.old, tx, op)]
      if (matches.new) return [insertMessage(definition, change.new, tx, op)]
      return []
  }
}
