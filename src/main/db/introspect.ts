import type pg from 'pg'
import type { TableInfo } from '../../shared/contract/db'

interface ColumnRow {
  table_oid: string
  schema: string
  table: string
  qualified: string
  column: string | null
  type: string | null
  /** The pool returns Postgres text output, so booleans arrive as 't' / 'f'. */
  not_null: 't' | 'f' | null
  is_pk: 't' | 'f' | null
  default_expr: string | null
}

const TABLES_SQL = `
SELECT c.oid::text AS table_oid, n.nspname AS schema, c.relname AS table, c.oid::regclass::text AS qualified,
       a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
       (a.attnum = ANY (i.indkey)) AS is_pk, pg_get_expr(d.adbin, d.adrelid) AS default_expr
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY n.nspname, c.relname, a.attnum`

/** Tables of every user schema with their columns, primary key and row count. */
export async function listTables(pool: pg.Pool): Promise<TableInfo[]> {
  const { rows } = await pool.query<ColumnRow>(TABLES_SQL)
  const tables = new Map<string, TableInfo>()
  for (const row of rows) {
    let table = tables.get(row.table_oid)
    if (!table) {
      table = { schema: row.schema, name: row.table, qualifiedName: row.qualified, columns: [], primaryKey: [], rowCount: 0 }
      tables.set(row.table_oid, table)
    }
    if (row.column === null) continue
    const isPrimaryKey = row.is_pk === 't'
    table.columns.push({ name: row.column, type: row.type ?? 'unknown', nullable: row.not_null !== 't', isPrimaryKey, default: row.default_expr })
    if (isPrimaryKey) table.primaryKey.push(row.column)
  }
  const list = [...tables.values()]
  await Promise.all(list.map(async (table) => (table.rowCount = await countRows(pool, table.qualifiedName))))
  return list
}

async function countRows(pool: pg.Pool, qualifiedName: string): Promise<number> {
  const { rows } = await pool.query<{ count: string }>(`SELECT count(*) AS count FROM ${qualifiedName}`)
  return Number(rows[0]?.count ?? 0)
}
