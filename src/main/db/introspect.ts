import type pg from 'pg'
import type { TableInfo } from '../../shared/contract/db'
import { readCatalog } from '../sql'

/** Tables of every user schema with their columns, primary key and row count. */
export async function listTables(pool: pg.Pool): Promise<TableInfo[]> {
  const catalog = await readCatalog(pool, 'user-tables')
  const list = catalog.map((table): TableInfo => ({
    schema: table.schema,
    name: table.name,
    qualifiedName: table.qualified,
    columns: table.columns.map((column) => ({
      name: column.name,
      type: column.displayType,
      nullable: !column.notNull,
      isPrimaryKey: column.pkIndex !== null,
      default: column.defaultExpr
    })),
    primaryKey: table.columns.filter((column) => column.pkIndex !== null).map((column) => column.name),
    rowCount: 0
  }))
  await Promise.all(list.map(async (table) => (table.rowCount = await countRows(pool, table.qualifiedName))))
  return list
}

async function countRows(pool: pg.Pool, qualifiedName: string): Promise<number> {
  const { rows } = await pool.query<{ count: string }>(`SELECT count(*) AS count FROM ${qualifiedName}`)
  return Number(rows[0]?.count ?? 0)
}
