import type pg from 'pg'
import { z } from 'zod'
import { type ColumnTypes, toColumnTypes } from '../../sql'

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

const TABLE_QUERY = `
SELECT c.oid::int AS oid, c.relkind AS relkind
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2`

const COLUMNS_QUERY = `
SELECT a.attname AS name, a.atttypid::int AS type_oid, t.typname AS type, t.typtype AS typtype, t.typcategory AS typcategory,
       et.typname AS element_type, a.attndims AS dims, a.atttypmod AS typmod, a.attnotnull AS not_null,
       a.attgenerated <> '' AS generated,
       (SELECT array_position(i.indkey::int2[], a.attnum) - array_lower(i.indkey::int2[], 1) FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary) AS pk_index,
       (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) AS enum_labels
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`

const columnRowSchema = z.object({
  name: z.string(),
  type_oid: z.coerce.number(),
  type: z.string(),
  typtype: z.string(),
  typcategory: z.string(),
  element_type: z.string().nullable(),
  dims: z.coerce.number(),
  typmod: z.coerce.number(),
  not_null: z.union([z.boolean(), z.string().transform((value) => value === 't' || value === 'true')]),
  generated: z.union([z.boolean(), z.string().transform((value) => value === 't' || value === 'true')]),
  pk_index: z.coerce.number().nullable(),
  enum_labels: z.union([z.array(z.string()), z.string()]).nullable()
})

export class TableNotFoundError extends Error {
  override readonly name = 'TableNotFoundError'
}

/** Parses a Postgres text array literal of simple labels (the pool returns raw text). */
function textArray(value: string[] | string | null): string[] | null {
  if (value === null || Array.isArray(value)) return value
  const inner = value.slice(1, -1)
  if (inner === '') return []
  return inner.split(',').map((item) => (item.startsWith('"') ? item.slice(1, -1).replace(/\\(.)/g, '$1') : item))
}

export async function readTableInfo(db: pg.Pool | pg.PoolClient, schema: string, name: string): Promise<TableInfo> {
  const table = await db.query<{ oid: string | number; relkind: string }>(TABLE_QUERY, [schema, name])
  const row = table.rows[0]
  if (!row || (row.relkind !== 'r' && row.relkind !== 'p')) {
    throw new TableNotFoundError(`Table "${schema}"."${name}" does not exist. If the table name contains capitals or special characters you must quote it.`)
  }
  const oid = Number(row.oid)
  const { rows } = await db.query(COLUMNS_QUERY, [oid])
  const parsed = rows.map((raw) => columnRowSchema.parse(raw))
  const columns: TableColumn[] = parsed.map((column) => ({
    name: column.name,
    type: column.typcategory === 'A' && column.element_type ? column.element_type : column.type,
    typeOid: column.type_oid,
    isArray: column.typcategory === 'A' && column.element_type !== null,
    dims: column.typcategory === 'A' ? Math.max(1, column.dims) : 0,
    typmod: column.typmod,
    notNull: column.not_null,
    generated: column.generated,
    pkIndex: column.pk_index
  }))
  const pk = columns.filter((column) => column.pkIndex !== null).sort((a, b) => (a.pkIndex ?? 0) - (b.pkIndex ?? 0))
  const columnTypes = toColumnTypes(parsed.map((column) => ({ ...column, enum_labels: textArray(column.enum_labels) })))
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
export const columnsFingerprint = (columns: ReadonlyArray<{ name: string; typeOid: number; typmod?: number; typeMod?: number }>): string =>
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
