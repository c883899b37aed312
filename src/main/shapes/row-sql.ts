import { quoteIdent } from './where'
import type { TableInfo } from './table-info'

/** Session settings under which Postgres formats every value, on snapshot and replication connections alike. */
export const DISPLAY_SETTINGS: ReadonlyArray<readonly [string, string]> = [
  ['bytea_output', 'hex'],
  ['DateStyle', 'ISO, DMY'],
  ['TimeZone', 'UTC'],
  ['extra_float_digits', '1'],
  ['IntervalStyle', 'iso_8601']
]

const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`

export const setDisplaySettingsSql = (): string => DISPLAY_SETTINGS.map(([name, value]) => `SET LOCAL ${name} = ${sqlString(value)}`).join('; ')

export const qualifiedName = (table: Pick<TableInfo, 'schema' | 'name'>): string => `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`

/**
 * `SELECT <columns> FROM <table> [WHERE …]`: plain column values, so Postgres formats each with its type's output
 * function — the same text pgoutput sends for live changes.
 */
export function selectRowsSql(table: TableInfo, columns: readonly string[], whereSql: string | null): string {
  return `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(table)}${whereSql ? ` WHERE ${whereSql}` : ''}`
}

const COPY_ESCAPES: Readonly<Record<string, string>> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' }

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const NOT_JSON_SAFE = /[\u0000-\u0008\u000b-\u001f]|\\v/

/**
 * COPY text whose fields become JSON string bodies once `"` is escaped: COPY's escapes (`\\ \n \r \t \b \f`) are
 * JSON's too. Not so with a `\v` escape or a raw control character (tab and newline, COPY's separators, aside).
 */
export const notJsonSafe = (text: string): boolean => NOT_JSON_SAFE.test(text)

/** One field of COPY's text format: `\N` is NULL, backslash escapes undone. */
function copyField(text: string): string | null {
  if (text === '\\N') return null
  if (!text.includes('\\')) return text
  return text.replace(/\\(.)/g, (_, escape: string) => COPY_ESCAPES[escape] ?? escape)
}

export const parseCopyLine = (line: string): Array<string | null> => line.split('\t').map(copyField)

/** Splits COPY TO STDOUT text output into lines, carrying a partial last line to the next buffer. */
export class CopyTextLines {
  private rest: Buffer = Buffer.alloc(0)

  /** The complete lines, and whether all of them are JSON-safe as they stand (see `notJsonSafe`). */
  push(data: Buffer): { lines: string[]; jsonSafe: boolean } {
    const buffer = this.rest.length > 0 ? Buffer.concat([this.rest, data]) : data
    const end = buffer.lastIndexOf(10)
    if (end === -1) {
      this.rest = buffer
      return { lines: [], jsonSafe: true }
    }
    this.rest = Buffer.from(buffer.subarray(end + 1))
    const text = buffer.toString('utf8', 0, end)
    return { lines: text.split('\n'), jsonSafe: !notJsonSafe(text) }
  }
}
