import { DISPLAY_SETTINGS } from '../../../shared/protocol'
import { quoteIdent } from '../../sql'
import type { TableInfo } from './table-info'

const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`

/**
 * How Postgres reads the SQL we send: string literals as the where's parser read them, whatever the database's
 * default (with standard_conforming_strings off, a backslash in '…' would escape the next character).
 */
const SQL_TEXT_SETTINGS: ReadonlyArray<readonly [string, string]> = [['standard_conforming_strings', 'on']]

/** The snapshot transaction's settings: values printed as pgoutput prints them, SQL read as it was written. */
export const setSessionSettingsSql = (): string =>
  [...DISPLAY_SETTINGS, ...SQL_TEXT_SETTINGS]
    .map(([name, value]) => `SET LOCAL ${name} = ${sqlString(value)}`)
    .join('; ')

export const qualifiedName = (table: Pick<TableInfo, 'schema' | 'name'>): string =>
  `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`

/**
 * `SELECT <columns> FROM <table> [WHERE …]`: plain column values, so Postgres formats each with its type's output
 * function — the same text pgoutput sends for live changes.
 */
export function selectRowsSql(table: TableInfo, columns: readonly string[], whereSql: string | null): string {
  return `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(table)}${whereSql ? ` WHERE ${whereSql}` : ''}`
}

const COPY_ESCAPES: Readonly<Record<string, string>> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' }

/** One field of COPY's text format: `\N` is NULL, backslash escapes undone. */
function copyField(text: string): string | null {
  if (text === '\\N') return null
  if (!text.includes('\\')) return text
  return text.replace(/\\(.)/g, (_, escape: string) => COPY_ESCAPES[escape] ?? escape)
}

export const parseCopyLine = (line: string): Array<string | null> => line.split('\t').map(copyField)
