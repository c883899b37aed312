import { quoteIdent } from './where'
import type { TableColumn, TableInfo } from './table-info'

/** Session settings under which Postgres formats every value, on snapshot and replication connections alike. */
export const DISPLAY_SETTINGS: ReadonlyArray<readonly [string, string]> = [
  ['bytea_output', 'hex'],
  ['DateStyle', 'ISO, DMY'],
  ['TimeZone', 'UTC'],
  ['extra_float_digits', '1'],
  ['IntervalStyle', 'iso_8601']
]

const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`

export const qualifiedName = (table: Pick<TableInfo, 'schema' | 'name'>): string => `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`

/** `"schema"."table"` as it starts every row key: `/` doubled and `.` doubled in the names. */
export function keyPrefix(table: Pick<TableInfo, 'schema' | 'name'>): string {
  const escape = (name: string) => name.replaceAll('/', '//').replaceAll('.', '..')
  return `"${escape(table.schema)}"."${escape(table.name)}"`
}

/** Postgres text output of a column; `concat` keeps bpchar's padding, which a `::text` cast would strip. */
function textOf(column: TableColumn): string {
  const name = quoteIdent(column.name)
  return column.type === 'bpchar' && !column.isArray ? `concat(${name})` : `${name}::text`
}

function keySql(table: TableInfo): string {
  const byName = new Map(table.columns.map((column) => [column.name, column]))
  const parts = table.keyColumns.map((name) => {
    const column = byName.get(name)
    if (!column) throw new Error(`key column ${name} is missing from ${table.name}`)
    const quoted = `'"' || replace(${textOf(column)}, '/', '//') || '"'`
    return table.hasPrimaryKey ? quoted : `coalesce(${quoted}, '_')`
  })
  return `${sqlString(keyPrefix(table))} || '/' || ${parts.join(` || '/' || `)}`
}

function valueSql(table: TableInfo, selected: readonly string[]): string {
  const columns = table.columns.filter((column) => selected.includes(column.name))
  const fields = columns.map((column, index) => {
    const name = `${index === 0 ? '{' : ','}${JSON.stringify(column.name)}:`
    return `${sqlString(name)} || coalesce(to_json(${textOf(column)})::text, 'null')`
  })
  return fields.length === 0 ? `'{}'` : `${fields.join(' || ')} || '}'`
}

/**
 * SELECT producing one insert message per row as a line of JSON, built by Postgres itself so the values are its own
 * text output. `extraHeaders` is spliced into the headers object (e.g. `,"snapshot_mark":7`).
 */
export function insertMessagesSql(table: TableInfo, selected: readonly string[], whereSql: string | null, extraHeaders = ''): string {
  const headers = `{"headers":{"operation":"insert","relation":${JSON.stringify([table.schema, table.name])}${extraHeaders}},"key":`
  const line = `${sqlString(headers)} || to_json(${keySql(table)})::text || ',"value":' || ${valueSql(table, selected)} || '}'`
  return `SELECT ${line} FROM ${qualifiedName(table)}${whereSql ? ` WHERE ${whereSql}` : ''}`
}

/** COPY … TO STDOUT in a CSV dialect whose quote and delimiter never occur in JSON text, so lines arrive verbatim. */
export const copyVerbatim = (select: string): string => `COPY (${select}) TO STDOUT WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')`

export const setDisplaySettingsSql = (): string => DISPLAY_SETTINGS.map(([name, value]) => `SET LOCAL ${name} = ${sqlString(value)}`).join('; ')
