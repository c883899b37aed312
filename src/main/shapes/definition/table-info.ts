import { type ColumnTypes, type Queryable, readCatalog, toColumnTypes } from '../../sql'

/** One column of a shaped table, as the schema header and the SQL builders need it. */
export interface TableColumn {
  name: string
  /** pg_type.typname; for arrays the element's type name. */
  type: string
  typeOid: number
  isArray: boolean
  dims: number
  typmod: number
  notNull: boolean
  generated: boolean
  /** 0-based position in the primary key, or null. */
  pkIndex: number | null
}

export interface TableInfo {
  oid: number
  schema: string
  name: string
  columns: TableColumn[]
  /** Primary-key column names in key order; every column (sorted by name) when the table has no primary key. */
  keyColumns: string[]
  hasPrimaryKey: boolean
  columnTypes: ColumnTypes
  /** Changes whenever a column is added, dropped, renamed or retyped (see columnsFingerprint). */
  fingerprint: string
}

export class TableNotFoundError extends Error {
  override readonly name = 'TableNotFoundError'
}

export async function readTableInfo(db: Queryable, schema: string, name: string): Promise<TableInfo> {
  const table = await readCatalog(db, { schema, name })
  if (!table) {
    throw new TableNotFoundError(
      `Table "${schema}"."${name}" does not exist. If the table name contains capitals or special characters you must quote it.`
    )
  }
  const { oid } = table
  const columns: TableColumn[] = table.columns.map((column) => ({
    name: column.name,
    type: column.typcategory === 'A' && column.elementType ? column.elementType : column.type,
    typeOid: column.typeOid,
    isArray: column.typcategory === 'A' && column.elementType !== null,
    dims: column.typcategory === 'A' ? Math.max(1, column.dims) : 0,
    typmod: column.typmod,
    notNull: column.notNull,
    generated: column.generated,
    pkIndex: column.pkIndex
  }))
  const pk = columns.filter((column) => column.pkIndex !== null).sort((a, b) => (a.pkIndex ?? 0) - (b.pkIndex ?? 0))
  const columnTypes = toColumnTypes(
    table.columns.map((column) => ({
      name: column.name,
      type: column.type,
      typtype: column.typtype,
      typcategory: column.typcategory,
      element_type: column.elementType,
      enum_labels: column.enumLabels
    }))
  )
  return {
    oid,
    schema,
    name,
    columns,
    keyColumns: pk.length > 0 ? pk.map((column) => column.name) : columns.map((column) => column.name).sort(),
    hasPrimaryKey: pk.length > 0,
    columnTypes,
    // generated columns are never replicated (nor shaped), so the stream's Relation messages leave them out
    fingerprint: columnsFingerprint(columns.filter((column) => !column.generated))
  }
}

/** Names and types of the columns in order: what a replication Relation message also tells. */
export const columnsFingerprint = (
  columns: ReadonlyArray<{ name: string; typeOid: number; typmod?: number; typeMod?: number }>
): string =>
  columns.map((column) => `${column.name}:${column.typeOid}:${column.typmod ?? column.typeMod ?? -1}`).join(',')

/** The `<brand>-schema` header: selected columns only, modifiers only where present. */
export function schemaHeader(table: TableInfo, selected: readonly string[]): Record<string, Record<string, unknown>> {
  const header: Record<string, Record<string, unknown>> = {}
  for (const column of table.columns) {
    if (!selected.includes(column.name)) continue
    const entry: Record<string, unknown> = { type: column.type }
    if (column.isArray) entry.dims = column.dims
    if (column.pkIndex !== null) entry.pk_index = column.pkIndex
    if (column.notNull) entry.not_null = true
    Object.assign(entry, typeModifiers(column))
    Object.defineProperty(header, column.name, { value: entry, enumerable: true })
  }
  return header
}

function typeModifiers(column: TableColumn): Record<string, number> {
  const mod = column.typmod
  if (mod < 0) return {}
  switch (column.type) {
    case 'varchar':
      return { max_length: mod - 4 }
    case 'bpchar':
      return { length: mod - 4 }
    case 'bit':
    case 'varbit':
      return { length: mod }
    case 'time':
    case 'timetz':
    case 'timestamp':
    case 'timestamptz':
      return { precision: mod }
    case 'numeric':
      return { precision: ((mod - 4) >> 16) & 0xffff, scale: (mod - 4) & 0xffff }
    case 'interval':
      return { precision: mod & 0xffff }
    default:
      return { type_mod: mod }
  }
}
