import type { TableInfo } from '../../../shared/contract/db'

const quoteIdentifier = (name: string) => (/^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`)

/** The `table` parameter for a table: bare for public tables, `schema.name` otherwise, quoted where needed. */
export const tableParam = (table: Pick<TableInfo, 'schema' | 'name'>): string =>
  table.schema === 'public'
    ? quoteIdentifier(table.name)
    : `${quoteIdentifier(table.schema)}.${quoteIdentifier(table.name)}`
