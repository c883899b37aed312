import { CONTROL } from '../../../shared/protocol'
import type { ResolvedShape } from '../definition/definition'
import type { TableInfo } from '../definition/table-info'

export type Row = Readonly<Record<string, string | null>>

/** One row operation of a committed transaction, as the router sees it. */
export type RowChange =
  { kind: 'insert'; new: Row } | { kind: 'update'; old: Row; new: Row } | { kind: 'delete'; old: Row }

export interface TransactionContext {
  xid: number
  lsn: bigint
}

export interface ShapeMessage {
  op: number
  message: {
    headers: Record<string, unknown>
    key: string
    value: Record<string, string | null>
    old_value?: Record<string, string | null>
  }
}

/** `"schema"."table"` as it starts every row key: `/` doubled and `.` doubled in the names. */
export function keyPrefix(table: Pick<TableInfo, 'schema' | 'name'>): string {
  const escape = (name: string) => name.replaceAll('/', '//').replaceAll('.', '..')
  return `"${escape(table.schema)}"."${escape(table.name)}"`
}

const keyPart = (value: string | null | undefined): string =>
  value === null || value === undefined ? '_' : `"${value.replaceAll('/', '//')}"`

/** `"schema"."table"/"pk1"/"pk2"`: `/` in values doubled, NULL (tables without a key) as a bare `_`. */
export function rowKey(table: TableInfo, row: Row): string {
  return `${keyPrefix(table)}/${table.keyColumns.map((name) => keyPart(row[name])).join('/')}`
}

/**
 * Postgres prints booleans as `t`/`f` (in COPY and in pgoutput); the protocol's rows say `true`/`false`, as the
 * reference's snapshots do. We send `true`/`false` everywhere (see docs/protocol.md).
 */
function wireValue(isBool: boolean, value: string | null): string | null {
  if (value === null || !isBool) return value
  return value === 't' ? 'true' : value === 'f' ? 'false' : value
}

/** Booleans are the one type whose text the protocol rewrites (`t`/`f` → `true`/`false`); arrays of them are not. */
export const isBoolColumn = (table: TableInfo, name: string): boolean =>
  table.columns.some((column) => column.name === name && column.type === 'bool' && !column.isArray)

function pick(definition: ResolvedShape, row: Row, names: readonly string[]): Record<string, string | null> {
  const value: Record<string, string | null> = {}
  for (const name of names)
    Object.defineProperty(value, name, {
      value: wireValue(isBoolColumn(definition.table, name), row[name] ?? null),
      enumerable: true
    })
  return value
}

/**
 * Encodes snapshot and subset rows (values in `columns` order, as selected) into insert messages, one line of JSON
 * each, with the same keys and values the live path produces.
 */
export class InsertEncoder {
  /** What the query must select: the shape's columns, then key columns it does not select. */
  readonly columns: string[]
  /** `{"headers":{…},"key":`, what every insert message starts with. */
  readonly prefix: string
  private readonly fields: Array<{ name: string; index: number; isBool: boolean }>
  private readonly keyIndexes: number[]
  /** `"schema"."table"/`, what every key starts with. */
  readonly keyStart: string

  constructor(definition: ResolvedShape, extraHeaders: Record<string, unknown> = {}) {
    const { table } = definition
    this.columns = [...definition.columns, ...table.keyColumns.filter((name) => !definition.columns.includes(name))]
    const headers = { operation: 'insert', relation: [table.schema, table.name], ...extraHeaders }
    this.prefix = `{"headers":${JSON.stringify(headers)},"key":`
    this.fields = definition.columns.map((name, index) => ({
      name: JSON.stringify(name),
      index,
      isBool: isBoolColumn(table, name)
    }))
    this.keyIndexes = table.keyColumns.map((name) => this.columns.indexOf(name))
    this.keyStart = `${keyPrefix(table)}/`
  }

  encode(values: ReadonlyArray<string | null>): string {
    const key = this.keyStart + this.keyIndexes.map((index) => keyPart(values[index])).join('/')
    let value = ''
    for (const field of this.fields) {
      const text = wireValue(field.isBool, values[field.index] ?? null)
      value += `${value === '' ? '{' : ','}${field.name}:${text === null ? 'null' : JSON.stringify(text)}`
    }
    return `${this.prefix}${JSON.stringify(key)},"value":${value === '' ? '{' : value}}}`
  }
}

function headers(
  definition: ResolvedShape,
  operation: string,
  tx: TransactionContext,
  op: number
): Record<string, unknown> {
  return {
    operation,
    relation: [definition.table.schema, definition.table.name],
    txids: [tx.xid],
    lsn: tx.lsn.toString(),
    op_position: op
  }
}

function keyColumnsOf(definition: ResolvedShape): string[] {
  return definition.table.hasPrimaryKey ? definition.table.keyColumns : definition.columns
}

function insertMessage(definition: ResolvedShape, row: Row, tx: TransactionContext, op: number): ShapeMessage {
  return {
    op,
    message: {
      headers: headers(definition, 'insert', tx, op),
      key: rowKey(definition.table, row),
      value: pick(definition, row, definition.columns)
    }
  }
}

function deleteMessage(definition: ResolvedShape, row: Row, tx: TransactionContext, op: number): ShapeMessage {
  const columns = definition.replica === 'full' ? definition.columns : keyColumnsOf(definition)
  return {
    op,
    message: {
      headers: headers(definition, 'delete', tx, op),
      key: rowKey(definition.table, row),
      value: pick(definition, row, columns)
    }
  }
}

function updateMessages(
  definition: ResolvedShape,
  change: { old: Row; new: Row },
  tx: TransactionContext,
  op: number
): ShapeMessage[] {
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
  const columns = full
    ? definition.columns
    : [...keyColumnsOf(definition).filter((name) => !changed.includes(name)), ...changed]
  const message: ShapeMessage['message'] = {
    headers: headers(definition, 'update', tx, op),
    key: newKey,
    value: pick(definition, change.new, columns)
  }
  if (full) message.old_value = pick(definition, change.old, changed)
  return [{ op, message }]
}

/**
 * What one row change means for one shape, given whether the old and new row versions match its where:
 * moves into the where become inserts, moves out deletes, PK changes a delete + insert pair.
 */
export function messagesFor(
  definition: ResolvedShape,
  change: RowChange,
  matches: { old: boolean; new: boolean },
  tx: TransactionContext,
  op: number
): ShapeMessage[] {
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

/** The control message at the log's end: the client is up to date with everything the server saw through `lsn`. */
export const upToDateMessage = (lsn: bigint): string =>
  JSON.stringify({ headers: { control: CONTROL.upToDate, global_last_seen_lsn: lsn.toString() } })
