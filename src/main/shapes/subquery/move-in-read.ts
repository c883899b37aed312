import type pg from 'pg'
import { type XidSnapshot, xidSnapshot } from '../../../shared/xid-snapshot'
import type { TableInfo } from '../definition/table-info'
import { qualifiedName } from '../definition/row-sql'
import { CommitNotVisibleError, VISIBILITY_WAIT_MS, visibilityPollMs } from '../snapshot/commit-visibility'
import { type SnapshotInfo, inSnapshot } from '../snapshot/snapshot'
import { quoteIdent } from '../../sql'
import type { Row } from '../storage/messages'
import type { Dependency, SubqueryPlan } from './plan'
import { SubqueryRowsError } from './limits'
import { type Fetch, dependencyColumns, keyValues } from './views'

/** What a move-in query read, in its own snapshot. */
export interface MoveInRead {
  columns: string[]
  rows: Array<Array<string | null>>
  snapshot: SnapshotInfo
  visibility: XidSnapshot
  /** pg_current_wal_lsn() in that snapshot: every transaction it sees ends at or before it. */
  lsn: bigint
  /** Rows of nested dependencies' tables that may have entered their results, by dependency (see Views.merge). */
  candidates: Map<number, Row[]>
}

export interface MoveInQuery {
  pool: pg.Pool
  table: TableInfo
  /** The columns read for each row. */
  columns: string[]
  /** One test per position of a moved dependency: its left-hand columns and the moved values (value keys). */
  tests: Array<{ lhs: string[]; values: string[] }>
  plan: SubqueryPlan
  /** Rows of nested dependencies' tables to fetch; every dependency above them (and the shape's rows) is read too. */
  fetches: readonly Fetch[]
  /** Rows a fetch may return at most (the shape's limit on what its subquery results hold). */
  maxRows: number
  /**
   * Opens the check of a snapshot about to be taken: a committed transaction it must include and does not (not visible
   * yet), or null. Done once checked (see CommitVisibility).
   */
  check(): { lacks(snapshot: XidSnapshot): number | null; done(): void }
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
  const { plan, fetches } = query
  const above = candidateDependencies(plan, fetches)
  // each query has parameters of its own: Postgres refuses a parameter a query does not use
  const dependencyQueries = [...above].map((index) => {
    const dependency = plan.dependencies[index] as Dependency
    const columns = dependencyColumns(dependency).map(quoteIdent).join(', ')
    const params = new Parameters()
    const where = candidateWhere(plan, fetches, above, index, params)
    const text = `SELECT ${columns} FROM ${qualifiedName(dependency.table)} WHERE ${where} LIMIT ${query.maxRows + 1}`
    return { index, text, values: params.values }
  })
  const params = new Parameters()
  const conditions = [
    ...query.tests.map(({ lhs, values }) => params.among(query.table, lhs, values)),
    ...plan.positions.flatMap((position) =>
      position.kind === 'sublink' && above.has(position.dependency)
        ? [
            linkedTo(
              plan,
              position.lhs,
              position.dependency,
              candidateWhere(plan, fetches, above, position.dependency, params)
            )
          ]
        : []
    )
  ]
  const table = qualifiedName(query.table)
  const text = `SELECT ${query.columns.map(quoteIdent).join(', ')} FROM ${table} WHERE ${conditions.join(' OR ')}`
  const lock = async (client: pg.PoolClient): Promise<void> =>
    void (await client.query(`LOCK TABLE ${table} IN ACCESS SHARE MODE`))
  const started = Date.now()
  for (let attempt = 0; ; attempt++) {
    const check = query.check()
    const read = await inSnapshot(
      query.pool,
      async (client, snapshot): Promise<MoveInRead | { lacking: number }> => {
        const visibility = xidSnapshot(snapshot.xmin, snapshot.xmax, snapshot.xipList)
        const lacking = check.lacks(visibility)
        check.done()
        if (lacking !== null) return { lacking }
        const fetched = new Map<number, Row[]>()
        for (const { index, ...dependencyQuery } of dependencyQueries) {
          const { rows } = await client.query<Row>({ ...dependencyQuery, types: textRows })
          if (rows.length > query.maxRows) throw new SubqueryRowsError(query.maxRows)
          fetched.set(index, rows)
        }
        const { rows } = await client.query<Array<string | null>>({
          text,
          values: params.values,
          rowMode: 'array',
          types: textRows
        })
        const lsn = BigInt(snapshot.databaseLsn)
        return { columns: query.columns, rows, snapshot, visibility, lsn, candidates: fetched }
      },
      { prepare: lock }
    ).finally(() => check.done())
    if (!('lacking' in read)) return read
    if (query.closed()) throw new Error('the shape was removed')
    if (Date.now() - started > VISIBILITY_WAIT_MS) throw new CommitNotVisibleError(read.lacking, VISIBILITY_WAIT_MS)
    await sleep(visibilityPollMs(attempt))
  }
}

/** The dependencies with rows to fetch, and every dependency whose where uses one of them (each after those it uses). */
function candidateDependencies(plan: SubqueryPlan, fetches: readonly Fetch[]): Set<number> {
  const found = new Set(fetches.map((fetch) => fetch.dependency))
  plan.dependencies.forEach((dependency, index) => {
    if (dependency.plan.positions.some((position) => position.kind === 'sublink' && found.has(position.dependency)))
      found.add(index)
  })
  return found
}

/**
 * The rows of a dependency's table whose result membership may have changed: those holding a fetched value, or
 * linking to such rows of a dependency below. A superset, judged when the move-in is spliced.
 */
function candidateWhere(
  plan: SubqueryPlan,
  fetches: readonly Fetch[],
  above: ReadonlySet<number>,
  index: number,
  params: Parameters
): string {
  const dependency = plan.dependencies[index] as Dependency
  const parts = fetches
    .filter((fetch) => fetch.dependency === index)
    .map((fetch) => params.among(dependency.table, fetch.lhs, fetch.values))
  for (const position of dependency.plan.positions) {
    if (position.kind === 'sublink' && above.has(position.dependency))
      parts.push(
        linkedTo(
          plan,
          position.lhs,
          position.dependency,
          candidateWhere(plan, fetches, above, position.dependency, params)
        )
      )
  }
  return `(${parts.join(' OR ')})`
}

/** A query's parameters: arrays of values as text, compared with columns cast to text. */
class Parameters {
  readonly values: string[][] = []

  /** A test that `lhs` holds one of `values` (value keys as valueKey makes them). */
  among(table: TableInfo, lhs: readonly string[], values: readonly string[]): string {
    const arrays = lhs.map((name, column) => {
      this.values.push(values.map((value) => textOfValue(table, name, keyValues(value, lhs.length)[column] ?? '')))
      return `$${this.values.length}::text[]`
    })
    if (lhs.length === 1) return `${quoteIdent(lhs[0] ?? '')}::text = ANY(${arrays[0]})`
    return `ROW(${lhs.map((name) => `${quoteIdent(name)}::text`).join(', ')}) IN (SELECT * FROM unnest(${arrays.join(', ')}))`
  }
}

/** `lhs IN (the selected columns of the dependency's rows matching where)`. */
function linkedTo(plan: SubqueryPlan, lhs: readonly string[], index: number, where: string): string {
  const dependency = plan.dependencies[index] as Dependency
  const left = lhs.length === 1 ? quoteIdent(lhs[0] ?? '') : `(${lhs.map(quoteIdent).join(', ')})`
  const selected = dependency.columns.map(quoteIdent).join(', ')
  return `${left} IN (SELECT ${selected} FROM ${qualifiedName(dependency.table)} WHERE ${where})`
}

/** A value as `column::text` prints it: pgoutput prints booleans t/f, the cast true/false. */
function textOfValue(table: TableInfo, column: string, value: string): string {
  const isBool = table.columns.some((info) => info.name === column && info.type === 'bool' && !info.isArray)
  return isBool ? (value === 't' ? 'true' : value === 'f' ? 'false' : value) : value
}
