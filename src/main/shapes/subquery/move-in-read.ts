import type pg from 'pg'
import { type XidSnapshot, xidSnapshot } from '../../../shared/xid-snapshot'
import type { TableInfo } from '../definition/table-info'
import { qualifiedName } from '../definition/row-sql'
import { CommitNotVisibleError, VISIBILITY_WAIT_MS, visibilityPollMs } from '../replication/commit-visibility'
import { type SnapshotInfo, inSnapshot } from '../snapshot/snapshot'
import { quoteIdent } from '../../sql'
import { keyValues } from './views'

/** What a move-in query read, in its own snapshot. */
export interface MoveInRead {
  columns: string[]
  rows: Array<Array<string | null>>
  snapshot: SnapshotInfo
  visibility: XidSnapshot
  /** pg_current_wal_lsn() in that snapshot: every transaction it sees ends at or before it. */
  lsn: bigint
}

export interface MoveInQuery {
  pool: pg.Pool
  table: TableInfo
  /** The columns read for each row. */
  columns: string[]
  /** One test per position of a moved dependency: its left-hand columns and the moved values (value keys). */
  tests: Array<{ lhs: string[]; values: string[] }>
  /** A committed transaction the snapshot must include and does not (it is not visible yet), or null. */
  lacks(snapshot: XidSnapshot): number | null
  /** The shape is gone: stop taking snapshots. */
  closed(): boolean
}

const textRows = { getTypeParser: () => (value: string) => value }
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Reads the rows whose tested columns hold a moved value, in a snapshot of its own taken after the shape's table is
 * locked for share (so the snapshot sees every transaction committed before the lock was granted), with the WAL
 * position it saw. A snapshot that lacks a transaction already processed (committed and replicated, not yet visible:
 * see CommitVisibility) is dropped and taken again, for up to VISIBILITY_WAIT_MS.
 */
export async function readMoveIn(query: MoveInQuery): Promise<MoveInRead> {
  const params: string[][] = []
  const conditions = query.tests.map(({ lhs, values }) => {
    const arrays = lhs.map((name, column) => {
      params.push(values.map((value) => textOfValue(query.table, name, keyValues(value, lhs.length)[column] ?? '')))
      return `$${params.length}::text[]`
    })
    if (lhs.length === 1) return `${quoteIdent(lhs[0] ?? '')}::text = ANY(${arrays[0]})`
    return `ROW(${lhs.map((name) => `${quoteIdent(name)}::text`).join(', ')}) IN (SELECT * FROM unnest(${arrays.join(', ')}))`
  })
  const table = qualifiedName(query.table)
  const text = `SELECT ${query.columns.map(quoteIdent).join(', ')} FROM ${table} WHERE ${conditions.join(' OR ')}`
  const lock = async (client: pg.PoolClient): Promise<void> =>
    void (await client.query(`LOCK TABLE ${table} IN ACCESS SHARE MODE`))
  const started = Date.now()
  for (let attempt = 0; ; attempt++) {
    const read = await inSnapshot(
      query.pool,
      async (client, snapshot): Promise<MoveInRead | { lacking: number }> => {
        const visibility = xidSnapshot(snapshot.xmin, snapshot.xmax, snapshot.xipList)
        const lacking = query.lacks(visibility)
        if (lacking !== null) return { lacking }
        const { rows } = await client.query<Array<string | null>>({
          text,
          values: params,
          rowMode: 'array',
          types: textRows
        })
        return { columns: query.columns, rows, snapshot, visibility, lsn: BigInt(snapshot.databaseLsn) }
      },
      { prepare: lock }
    )
    if (!('lacking' in read)) return read
    if (query.closed()) throw new Error('the shape was removed')
    if (Date.now() - started > VISIBILITY_WAIT_MS) throw new CommitNotVisibleError(read.lacking, VISIBILITY_WAIT_MS)
    await sleep(visibilityPollMs(attempt))
  }
}

/** A value as `column::text` prints it: pgoutput prints booleans t/f, the cast true/false. */
function textOfValue(table: TableInfo, column: string, value: string): string {
  const isBool = table.columns.some((info) => info.name === column && info.type === 'bool' && !info.isArray)
  return isBool ? (value === 't' ? 'true' : value === 'f' ? 'false' : value) : value
}
