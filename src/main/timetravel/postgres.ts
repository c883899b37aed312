import pg from 'pg'
import { maskUrl } from '../db/database'
import type { ShapeDefinition } from '../../shared/contract/timetravel'
import type { Row } from '../../shared/shape-client/messages'
import { InvalidRequestError, type ResolvedShape, resolveDefinition } from '../shapes/definition/definition'
import { compileSubqueryWhere } from '../shapes/subquery/plan'
import { qualifiedName, setSessionSettingsSql } from '../shapes/definition/row-sql'
import { loadParser, quoteIdent } from '../sql'
import { readTableInfo } from '../shapes/definition/table-info'
import { InsertEncoder, isBoolColumn } from '../shapes/storage/messages'
import { TimeTravelInputError } from './log'

/** Every statement of a read gives up after this long (a where no index serves, on a large table). */
const STATEMENT_TIMEOUT_MS = 30_000
/** Rows of a shape read from Postgres at most. */
export const MAX_POSTGRES_ROWS = 1_000_000
/** Every value as the text Postgres formats it (the display settings are set), as the shape server sends it. */
export const TEXT_VALUES = { getTypeParser: () => (value: string) => value }

/**
 * Runs `read` in one REPEATABLE READ READ ONLY transaction on the database at `url` (every statement under a timeout,
 * values printed as the shape server prints them); a database it cannot reach is a TimeTravelInputError.
 */
export async function readOnly<T>(url: string, read: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  client.on('error', () => undefined)
  try {
    await client.connect()
  } catch (error) {
    await client.end().catch(() => undefined)
    throw new TimeTravelInputError(`cannot connect to ${maskUrl(url)}: ${(error as Error).message}`)
  }
  try {
    await client.query(
      `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}; ${setSessionSettingsSql()}`
    )
    const result = await read(client)
    await client.query('COMMIT')
    return result
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** The shape resolved against the database's catalog, as the shape server resolves a request's. */
export async function resolveShape(client: pg.Client, definition: ShapeDefinition): Promise<ResolvedShape> {
  // the where is parsed by Postgres's own parser (WebAssembly), loaded once per process
  await loadParser()
  try {
    return await resolveDefinition(
      definition,
      (schema, name) => readTableInfo(client, schema, name),
      compileSubqueryWhere
    )
  } catch (error) {
    if (error instanceof InvalidRequestError)
      throw new TimeTravelInputError(`the shape cannot be read from this database: ${error.message}`)
    throw error
  }
}

/** The where as Postgres runs it (its subqueries real), rebuilt from its parse tree; null for a shape without one. */
export const whereSql = (definition: ResolvedShape): string | null =>
  definition.where?.sql ?? definition.subquery?.sql ?? null

export interface PostgresRows {
  rows: Map<string, Row>
  /** The transaction that wrote each row's current version (its `xmin`). */
  writtenBy: Map<string, string>
  /** Columns the shape server spells `true`/`false`. */
  boolColumns: string[]
  readAt: string
  snapshot: { xmin: string; xmax: string; xipList: string[] }
}

/** The rows Postgres holds for the shape now, keyed and valued exactly as the shape server would send them. */
export async function readShapeRows(client: pg.Client, definition: ResolvedShape): Promise<PostgresRows> {
  const { rows: marks } = await client.query<{ snapshot: string }>('SELECT pg_current_snapshot()::text AS snapshot')
  const [xmin = '0', xmax = '0', xip = ''] = (marks[0]?.snapshot ?? '').split(':')
  const encoder = new InsertEncoder(definition)
  const where = whereSql(definition)
  const { rows } = await client.query<Array<string | null>>({
    text: `SELECT ${[...encoder.columns.map(quoteIdent), 'xmin::text'].join(', ')} FROM ${qualifiedName(definition.table)}${where ? ` WHERE ${where}` : ''} LIMIT ${MAX_POSTGRES_ROWS + 1}`,
    rowMode: 'array',
    types: TEXT_VALUES
  })
  if (rows.length > MAX_POSTGRES_ROWS)
    throw new TimeTravelInputError(`the shape has more than ${MAX_POSTGRES_ROWS} rows in Postgres`)
  const byKey = new Map<string, Row>()
  const writtenBy = new Map<string, string>()
  for (const values of rows) {
    const message = JSON.parse(encoder.encode(values.slice(0, -1))) as { key: string; value: Row }
    byKey.set(message.key, message.value)
    writtenBy.set(message.key, values.at(-1) ?? '')
  }
  return {
    rows: byKey,
    writtenBy,
    boolColumns: definition.columns.filter((column) => isBoolColumn(definition.table, column)),
    readAt: new Date().toISOString(),
    snapshot: { xmin, xmax, xipList: xip === '' ? [] : xip.split(',') }
  }
}

/** A row with its booleans spelt as the shape server spells them (`true`/`false`; the reference's live rows: `t`/`f`). */
export function normaliseRow(boolColumns: ReadonlySet<string>, row: Row): Row {
  const normal: Row = {}
  for (const [column, value] of Object.entries(row)) {
    const spelt =
      boolColumns.has(column) && (value === 't' || value === 'f') ? (value === 't' ? 'true' : 'false') : value
    Object.defineProperty(normal, column, { value: spelt, enumerable: true })
  }
  return normal
}
