import type { TableInfo } from '../../../shared/contract/db'
import { printedIdentifier, printedTableName } from '../../../shared/sql-names'

/** The `table` parameter for a table: bare for public tables, `schema.name` otherwise, quoted where needed. */
export const tableParam = (table: Pick<TableInfo, 'schema' | 'name'>): string =>
  table.schema === 'public' ? printedIdentifier(table.name) : printedTableName(table)
