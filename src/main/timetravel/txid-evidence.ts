import type pg from 'pg'
import type { ShapeDefinition } from '../../shared/contract/timetravel'
import { widenXid } from '../../shared/xid-snapshot'
import type { ResolvedShape } from '../shapes/definition/definition'
import { qualifiedName } from '../shapes/definition/row-sql'
import type { TableInfo } from '../shapes/definition/table-info'
import { rowKey } from '../shapes/storage/messages'
import { definitionTables } from '../shapes/definition/definition'
import { quoteIdent } from '../sql'
import { TimeTravelInputError } from './log'
import { TEXT_VALUES, resolveShape, whereSql } from './postgres'

/** Rows shown at most for one transaction in one table. */
const ROWS_SHOWN = 20
/** Transactions either side of the id looked at for the write it was probably meant for. */
const NEIGHBOURS_BEFORE = 5
const NEIGHBOURS_AFTER = 20

export type XactStatus = 'committed' | 'aborted' | 'in progress' | null

/** A row a transaction wrote (its current version's xmin), and whether the shape's where holds it. */
export interface WrittenRow {
  table: string
  key: string
  xid: number
  /** null for a subquery's table, which the where does not filter itself. */
  inShape: boolean | null
}

/** What Postgres can tell about a transaction and a shape. */
export interface ShapeEvidence {
  definition: ShapeDefinition
  /** Rows whose current version the transaction wrote, in the shape's tables. */
  written: WrittenRow[]
  /** Rows of the shape's own table written by transactions just before or after it. */
  neighbours: WrittenRow[]
  /** The shape could not be resolved against this database (a table gone…). */
  problem: string | null
}

export interface TxidEvidence {
  xid8: bigint
  status: XactStatus
  shapes: ShapeEvidence[]
}

async function rowsWritten(
  client: pg.Client,
  table: TableInfo,
  where: string | null,
  condition: string,
  values: unknown[]
): Promise<WrittenRow[]> {
  const keys = table.keyColumns.map(quoteIdent).join(', ')
  const inShape = where === null ? 'NULL' : `coalesce((${where}), false)`
  const { rows } = await client.query<Record<string, string | null>>({
    text: `SELECT ${keys}, xmin::text AS "xmin ", ${inShape}::text AS "in shape " FROM ${qualifiedName(table)} WHERE ${condition} LIMIT ${ROWS_SHOWN}`,
    values,
    types: TEXT_VALUES
  })
  return rows.map((row) => ({
    table: `${table.schema}.${table.name}`,
    key: rowKey(table, row),
    xid: Number(row['xmin ']),
    inShape: row['in shape '] === null ? null : row['in shape '] === 'true'
  }))
}

async function shapeEvidence(client: pg.Client, xid: number, definition: ShapeDefinition): Promise<ShapeEvidence> {
  let resolved: ResolvedShape
  try {
    resolved = await resolveShape(client, definition)
  } catch (error) {
    if (!(error instanceof TimeTravelInputError)) throw error
    return { definition, written: [], neighbours: [], problem: error.message }
  }
  const where = whereSql(resolved)
  const written: WrittenRow[] = []
  for (const table of definitionTables(resolved))
    written.push(
      ...(await rowsWritten(client, table, table === resolved.table ? where : null, 'xmin = $1::text::xid', [xid]))
    )
  const low = Math.max(3, xid - NEIGHBOURS_BEFORE)
  const neighbours = (
    await rowsWritten(client, resolved.table, where, 'xmin::text::bigint BETWEEN $1 AND $2 AND xmin <> $3::text::xid', [
      low,
      xid + NEIGHBOURS_AFTER,
      xid
    ])
  ).sort((a, b) => Math.abs(a.xid - xid) - Math.abs(b.xid - xid) || b.xid - a.xid)
  return { definition, written, neighbours, problem: null }
}

/**
 * Asks Postgres about a transaction id: its full id and status (`pg_xact_status`), and for each shape the rows whose
 * current version it wrote (`xmin`) in the shape's tables, with whether the where holds them, and the rows neighbouring
 * transactions wrote. An id Postgres never issued is a TimeTravelInputError.
 */
export async function txidEvidence(
  client: pg.Client,
  txid: bigint,
  definitions: ShapeDefinition[]
): Promise<TxidEvidence> {
  const { rows } = await client.query<{ next: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next')
  const next = BigInt(rows[0]?.next ?? '0')
  const xid8 = txid >= 2n ** 32n ? txid : widenXid(Number(txid), next)
  if (xid8 >= next)
    throw new TimeTravelInputError(
      `transaction ${txid} was never started in this database: the next id it gives is ${next}`
    )
  const { rows: statuses } = await client.query<{ status: XactStatus }>('SELECT pg_xact_status($1::xid8) AS status', [
    xid8.toString()
  ])
  const status = statuses[0]?.status ?? null
  const xid = Number(xid8 & 0xffffffffn)
  const shapes: ShapeEvidence[] = []
  for (const definition of definitions) shapes.push(await shapeEvidence(client, xid, definition))
  return { xid8, status, shapes }
}
