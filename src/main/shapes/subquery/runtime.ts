import type pg from 'pg'
import type { QueryArrayConfig } from 'pg'
import { type XidSnapshot, visibleIn, xidSnapshot } from '../../../shared/xid-snapshot'
import type { EncodedRows } from '../snapshot/copy-encoder'
import type { Row, RowChange, ShapeMessage, TransactionContext } from '../storage/messages'
import { qualifiedName } from '../definition/row-sql'
import type { Shape } from '../storage/shape'
import type { LogEntry } from '../storage/shape-log'
import { type SnapshotInfo, snapshotEndMessage } from '../snapshot/snapshot'
import { quoteIdent } from '../../sql'
import { type MoveInRead, readMoveIn } from './move-in-read'
import {
  LOADING,
  type MoveIn,
  type MoveInEffect,
  type MoveInEvent,
  type MoveInState,
  type PendingFetch,
  heldSinceOf,
  indexRoutableIn,
  nextMoveInState
} from './move-in-machine'
import { type SubsetSql, TaggedRows } from './tagged-rows'
import { type Move, cancelled, movesOf, overridesOf } from './moves'
import type { SubqueryPlan } from './plan'
import { type DependencyMoves, Views, dependencyColumns, valueKey } from './views'

/** A row change of one transaction for a subquery shape, with its position (op) in the transaction. */
export interface OuterChange {
  change: RowChange
  op: number
}

export interface InnerChange {
  table: string
  old: Row | null
  new: Row | null
}

/** What a transaction brings one subquery shape: changes to its table, and changes to its subqueries' tables. */
export interface TransactionPart {
  xid: number
  lsn: bigint
  /** Ops the transaction's row changes take; move events and move-in rows come after. */
  ops: number
  outer: OuterChange[]
  inner: InnerChange[]
}

export interface RuntimeOptions {
  pool: pg.Pool
  /** Part of every tag's hash, as the reference's stack id. */
  stack: string
  /** Rows the shape's subquery results may hold in memory. */
  maxRows: number
}

export interface RuntimeHooks {
  /** The shape's log grew, or a hold ended: what it wrote must be made durable (and acknowledged) with the next flush. */
  appended(shape: Shape): void
  /** Values entered (true) or left (false) the view of the shape's indexed dependency. */
  indexMoved(runtime: SubqueryRuntime, values: readonly string[], entered: boolean): void
  /** The shape cannot go on (a move-in query failed, or too many transactions arrived during one): its clients must refetch. */
  failed(runtime: SubqueryRuntime, error: Error): void
  /** Whether the shape may be routed by its index changed (see `routedByIndex`). */
  routingChanged(runtime: SubqueryRuntime): void
  /** The replication stream's position: every transaction that ends at or before it has been handed over. */
  streamPosition(): bigint
  /**
   * Opens the check of a snapshot about to be taken: which transaction taken from the stream so far (those of `except`
   * aside) it does not include. Done once checked.
   */
  checkSnapshot(): { lacks(snapshot: XidSnapshot, except: ReadonlySet<number>): number | null; done(): void }
  tableKey(table: { schema: string; name: string }): string
}

const FETCH_ROWS = 5_000
const textRows = { getTypeParser: () => (value: string) => value }

/**
 * The live side of one subquery shape: its dependencies' views (kept from the replication stream), the tags and
 * active_conditions of its rows, and move-in / move-out when a dependency's values change.
 */
export class SubqueryRuntime {
  readonly views: Views
  readonly plan: SubqueryPlan
  /** The dependency whose values index the shape for routing (`col IN (SELECT …)` ANDed at the top), or null. */
  readonly indexed: { dependency: number; column: string } | null
  private visibility: XidSnapshot | null = null
  /** Loading, live, or a move-in pending (see move-in-machine.ts). */
  private state: MoveInState = LOADING
  /** Transactions taken and not processed yet: until the views are loaded, or while a move-in is pending. */
  private incoming: TransactionPart[] = []
  /** Processed transactions' entries that wait for the pending move-in's block to be written with them. */
  private unwritten: Array<{ xid: number; entries: LogEntry[] }> = []
  /** Where the next entries without an offset of their own (events, move-in rows) go: after the last processed transaction. */
  private cursor = { tx: 0n, op: 0 }
  /** How its rows become messages (tags, active_conditions). */
  private readonly tagged: TaggedRows

  private readonly pool: pg.Pool
  private readonly maxRows: number

  constructor(
    readonly shape: Shape,
    options: RuntimeOptions,
    private readonly hooks: RuntimeHooks
  ) {
    const plan = shape.definition.subquery
    if (!plan) throw new Error(`shape ${shape.handle} has no subquery`)
    this.plan = plan
    this.pool = options.pool
    this.maxRows = options.maxRows
    this.views = new Views(plan, options.maxRows)
    this.tagged = new TaggedRows(shape, this.views, options.stack)
    const only = plan.disjuncts.length === 1 ? plan.disjuncts[0] : undefined
    const atom = only
      ?.map((index) => plan.positions[index])
      .find((position) => position?.kind === 'sublink' && !position.negated && position.lhs.length === 1)
    this.indexed = atom?.kind === 'sublink' ? { dependency: atom.dependency, column: atom.lhs[0] ?? '' } : null
  }

  get definition(): Shape['definition'] {
    return this.shape.definition
  }

  /** Values of the indexed dependency now. */
  indexValues(): string[] {
    return this.indexed ? [...(this.views.states[this.indexed.dependency]?.counts.keys() ?? [])] : []
  }

  // ---------- snapshot ----------

  /**
   * Reads the dependencies (their results only) and (unless `withRows` is false) the shape's rows in the snapshot
   * transaction, so that views and rows agree; transactions the stream delivered meanwhile are applied afterwards,
   * those in the snapshot skipped.
   */
  async readSnapshot(
    client: pg.PoolClient,
    info: SnapshotInfo,
    withRows: boolean,
    add: (rows: EncodedRows) => Promise<void>
  ): Promise<void> {
    this.visibility = xidSnapshot(info.xmin, info.xmax, info.xipList)
    for (const [index, dependency] of this.plan.dependencies.entries()) {
      const columns = dependencyColumns(dependency)
      const { rows } = await client.query<Row>({
        // one row past what may be held is enough to refuse the shape
        text: `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(dependency.table)} WHERE ${dependency.plan.sql} LIMIT ${this.maxRows + 1}`,
        types: textRows
      })
      this.views.load(index, rows)
    }
    // the rows carry the snapshot's conditions: the transactions taken meanwhile are processed after them
    if (withRows) await this.readRows(client, add)
    for (const value of this.indexValues()) this.hooks.indexMoved(this, [value], true)
    this.send({ kind: 'loaded' })
  }

  /** The shape's rows in the snapshot, tagged with the views as of the snapshot. */
  private async readRows(client: pg.PoolClient, add: (rows: EncodedRows) => Promise<void>): Promise<void> {
    const { columns } = this.tagged
    await client.query(
      `DECLARE subquery_snapshot NO SCROLL CURSOR FOR SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(this.definition.table)} WHERE ${this.plan.sql}`
    )
    for (;;) {
      const query: QueryArrayConfig = {
        text: `FETCH ${FETCH_ROWS} FROM subquery_snapshot`,
        rowMode: 'array',
        types: textRows
      }
      const { rows } = await client.query<Array<string | null>>(query)
      if (rows.length === 0) break
      await add(encodeLines(rows.map((values) => this.tagged.insertLine(values, columns, {}))))
    }
  }

  /**
   * A subset of this shape (its where ANDed with the subset's, ordered and paged): each row's active_conditions are
   * computed by Postgres in the subset's own snapshot, like its rows.
   */
  subsetQuery(subset: SubsetSql): ReturnType<TaggedRows['subsetQuery']> {
    return this.tagged.subsetQuery(subset)
  }

  // ---------- live ----------

  /**
   * Whether changes of the shape's table may reach it through its index alone: once its views are loaded, and during a
   * move-in whose values are known (the index holds them from the moving transaction on; a value that a transaction
   * held for the move-in brings in gets a move-in of its own, whose snapshot includes every transaction taken before
   * it). Not while rows of nested subqueries are fetched: the values entering are known only once they are read.
   */
  get routedByIndex(): boolean {
    return this.indexed !== null && indexRoutableIn(this.state)
  }

  /** The first commit LSN of which the shape's log does not hold everything yet, or null: nothing past it is acknowledged or claimed. */
  get heldFrom(): bigint | null {
    return heldSinceOf(this.state)
  }

  /** Takes a transaction's part for this shape, in stream order. */
  take(part: TransactionPart): void {
    if (this.state.phase === 'closed') return
    this.incoming.push(part)
    this.send({ kind: 'taken', waiting: this.incoming.length, position: this.hooks.streamPosition() })
  }

  /** The stream moved on: a pending move-in whose snapshot it has passed can be written. */
  streamMoved(): void {
    this.send({ kind: 'stream-moved', position: this.hooks.streamPosition() })
  }

  /** Stops for good (the shape was removed): a pending move-in writes nothing. */
  close(): void {
    this.send({ kind: 'close' })
  }

  /** An event from outside: a fault while acting on it gives the shape up. */
  private send(event: MoveInEvent): void {
    try {
      this.dispatch(event)
    } catch (error) {
      this.dispatch({ kind: 'failed', error: error as Error })
    }
  }

  private dispatch(event: MoveInEvent): void {
    const { state, effects } = nextMoveInState(this.state, event)
    this.state = state
    for (const effect of effects) this.act(effect)
  }

  private act(effect: MoveInEffect): void {
    switch (effect.kind) {
      case 'process':
        return this.process()
      case 'query':
        return this.query(effect.moveIn)
      case 'splice':
        if (!this.shape.invalidated) this.splice(effect.moveIn, effect.read)
        return
      case 'write-out':
        return this.writeOut(effect.holdEnded)
      case 'routing-changed':
        return this.hooks.routingChanged(this)
      case 'drop':
        this.incoming = []
        this.unwritten = []
        return
      case 'fail':
        return this.hooks.failed(this, effect.error)
    }
  }

  /** Processes taken transactions in order, until they are done or a move-in they started is pending. */
  private process(): void {
    while (this.state.phase === 'live' && !this.shape.invalidated) {
      const part = this.incoming.shift()
      if (!part) return
      const moveIn = this.step(part, null)
      this.dispatch({ kind: 'processed', moveIn, lsn: part.lsn })
    }
  }

  /**
   * One transaction: its changes of the shape's table as messages (judged with the views before its own moves, and
   * with the values of `unsent` moves as the client knows them: as before those moves), then its dependency changes
   * applied, with a move-out event for values that left. Returns the moves that bring rows in, and the rows to fetch
   * for nested dependencies (whose rows not held may have entered).
   */
  private step(part: TransactionPart, unsent: Move[] | null): { moves: Move[]; fetches: PendingFetch[] } {
    if (this.visibility && visibleIn(this.visibility, part.xid)) return { moves: [], fetches: [] }
    const overrides = unsent ? overridesOf(unsent) : undefined
    const context: TransactionContext = { xid: part.xid, lsn: part.lsn }
    const messages: ShapeMessage[] = []
    for (const { change, op } of part.outer) messages.push(...this.tagged.convert(change, context, op, overrides))
    const last = messages[messages.length - 1]
    if (last) last.message.headers.last = true
    // a transaction the move-in query did not see, written after its block and after later ones it saw, takes the
    // next offsets (the log's offsets only grow); its messages keep their lsn
    const after = part.lsn <= this.cursor.tx
    const entries: LogEntry[] = messages.map((entry) =>
      after
        ? this.next(JSON.stringify(entry.message))
        : { offset: { tx: part.lsn, op: entry.op }, line: JSON.stringify(entry.message) }
    )
    if (!after) this.cursor = { tx: part.lsn, op: part.ops }
    const { moves, fetches } = this.views.apply(part.inner, (dependency) => this.hooks.tableKey(dependency.table))
    const moveIns = this.moved(moves, part.xid, entries, unsent)
    this.unwritten.push({ xid: part.xid, entries })
    return { moves: moveIns, fetches: fetches.map((fetch) => ({ ...fetch, xid: part.xid })) }
  }

  /**
   * Dependency moves as the shape's clients see them: the routing index kept, a move-out event (appended to
   * `entries`) for values that turned positions false, and the moves that bring rows in returned. With `unsent` moves,
   * a value that moves back before its move-in is written was never moved for the client.
   */
  private moved(moves: readonly DependencyMoves[], xid: number, entries: LogEntry[], unsent: Move[] | null): Move[] {
    const moveIns: Move[] = []
    moves.forEach(({ entered, left }, dependency) => {
      if (this.indexed?.dependency === dependency) {
        if (entered.length > 0) this.hooks.indexMoved(this, entered, true)
        if (left.length > 0) this.hooks.indexMoved(this, left, false)
      }
      for (const move of [
        { values: entered, entered: true },
        { values: left, entered: false }
      ]) {
        const values = unsent ? cancelled(unsent, dependency, move.values, move.entered) : move.values
        if (values.length === 0) continue
        const positions = this.tagged.positionsOf(dependency)
        const outward = positions.filter((position) => position.negated === move.entered)
        if (outward.length > 0) entries.push(this.next(this.tagged.moveEvent('move-out', outward, values, xid)))
        if (positions.some((position) => position.negated !== move.entered))
          moveIns.push({ dependency, values, entered: move.entered, xid })
      }
    })
    return moveIns
  }

  private next(line: string): LogEntry {
    return { offset: { tx: this.cursor.tx, op: this.cursor.op++ }, line }
  }

  /** Writes what waited, in one append (a reader woken by it sees all of a splice or none), and the hold (if any) ends. */
  private writeOut(holdEnded: boolean): void {
    const entries = this.unwritten.flatMap((part) => part.entries)
    // every xid here is one the shape's snapshot did not see (step skips the others)
    const grew = entries.length > 0 && this.shape.receive(this.unwritten[0]?.xid ?? 0, entries)
    this.unwritten = []
    if (grew || holdEnded) this.hooks.appended(this.shape)
  }

  /** Starts the query of a move-in; the shape's transactions wait until it is spliced into the log. */
  private query({ moves, fetches }: MoveIn): void {
    readMoveIn({
      pool: this.pool,
      table: this.definition.table,
      columns: this.tagged.columns,
      tests: moves.flatMap((move) =>
        this.tagged.positionsOf(move.dependency).map(({ lhs }) => ({ lhs, values: move.values }))
      ),
      plan: this.plan,
      fetches,
      maxRows: this.maxRows,
      // what it reads must include every transaction taken but those waiting here: those processed were judged without
      // the moved values, and those not routed here (no value of the shape's index) may touch them
      check: () => {
        const check = this.hooks.checkSnapshot()
        return {
          lacks: (snapshot) => check.lacks(snapshot, new Set(this.incoming.map((part) => part.xid))),
          done: () => check.done()
        }
      },
      closed: () => this.state.phase === 'closed'
    }).then(
      (read) => this.send({ kind: 'read', read, position: this.hooks.streamPosition() }),
      (error: unknown) => this.send({ kind: 'failed', error: error as Error })
    )
  }

  /**
   * Writes a pending move-in once every transaction its query saw has arrived (the stream passed the WAL position it
   * read): the waiting transactions it saw (judged with the views before it), its event, its rows and snapshot-end,
   * then the waiting transactions it did not see, as usual. Postgres makes commits visible in an order of their own, so
   * a transaction the query saw may follow one it did not see in the stream: it is written before the block all the
   * same (docs/protocol.md, "The move-in splice").
   */
  private splice(moveIn: MoveIn, read: MoveInRead): void {
    const seen = this.incoming.filter((part) => visibleIn(read.visibility, part.xid))
    this.incoming = this.incoming.filter((part) => !visibleIn(read.visibility, part.xid))
    // the move-ins of the transactions it saw are written after it, by a move-in of their own
    const unsent = [...moveIn.moves]
    const laterFetches: PendingFetch[] = []
    for (const part of seen) {
      const { moves, fetches } = this.step(part, unsent)
      unsent.push(...moves)
      laterFetches.push(...fetches)
    }
    const later = unsent.slice(moveIn.moves.length).filter((move) => move.values.length > 0)
    const xid = moveIn.moves[0]?.xid ?? moveIn.fetches[0]?.xid ?? 0
    const entries: LogEntry[] = []
    // the rows it read of nested dependencies' tables, in their results now: their moves belong to this block
    const merged = this.views.merge(read.candidates)
    const moveIns = [...moveIn.moves, ...this.moved(merged, xid, entries, null)].filter(
      (move) => move.values.length > 0
    )
    for (const move of moveIns) {
      const positions = this.tagged.positionsOf(move.dependency).filter((position) => position.negated !== move.entered)
      entries.push(this.next(this.tagged.moveEvent('move-in', positions, move.values, move.xid)))
    }
    const known = overridesOf(later)
    const before = overridesOf([...unsent, ...movesOf(merged, xid)])
    let rows = 0
    for (const values of moveIns.length > 0 ? read.rows : []) {
      const row: Record<string, string | null> = {}
      read.columns.forEach((name, index) => (row[name] = values[index] ?? null))
      const now = this.views.conditions(this.plan, row, known)
      // rows already in (through another disjunct) get no insert: the event turns their condition on
      if (
        !this.views.included(this.plan, now) ||
        this.views.included(this.plan, this.views.conditions(this.plan, row, before))
      )
        continue
      entries.push(this.next(this.tagged.insertLine(values, read.columns, { is_move_in: true }, now)))
      rows += 1
    }
    if (rows > 0) entries.push(this.next(snapshotEndMessage(read.snapshot)))
    this.unwritten.push({ xid, entries })
    this.dispatch({ kind: 'spliced', later: { moves: later, fetches: laterFetches } })
  }
}

/** Lines as the snapshot's chunk writer takes them: one buffer, each line ending with a newline. */
export function encodeLines(lines: readonly string[]): EncodedRows {
  const buffers = lines.map((line) => Buffer.from(`${line}\n`))
  const rowEnds = new Int32Array(buffers.length)
  let end = 0
  buffers.forEach((buffer, index) => (rowEnds[index] = end += buffer.length))
  return { data: Buffer.concat(buffers), rowEnds }
}

export { valueKey }
