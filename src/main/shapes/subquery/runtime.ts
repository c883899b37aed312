import type pg from 'pg'
import type { QueryArrayConfig } from 'pg'
import { type XidSnapshot, visibleIn, xidSnapshot } from '../../../shared/xid-snapshot'
import type { EncodedRows } from '../snapshot/copy-encoder'
import { InsertEncoder, type Row, type RowChange, type ShapeMessage, type TransactionContext, messagesFor, rowKey } from '../storage/messages'
import { qualifiedName } from '../definition/row-sql'
import type { Shape } from '../storage/shape'
import type { LogEntry } from '../storage/shape-log'
import { type SnapshotInfo, inSnapshot, snapshotEndMessage } from '../snapshot/snapshot'
import { quoteIdent } from '../../sql'
import type { Dependency, SubqueryPlan } from './plan'
import { type Overrides, Views, keyValues, slotHash, valueKey } from './views'

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

export interface RuntimeHooks {
  /** The shape's log grew: it must be made durable with the next flush. */
  appended(shape: Shape): void
  /** Values entered (true) or left (false) the view of the shape's indexed dependency. */
  indexMoved(runtime: SubqueryRuntime, values: readonly string[], entered: boolean): void
  /** The shape cannot go on (a move-in query failed): its clients must refetch. */
  failed(runtime: SubqueryRuntime, error: Error): void
  /** The views are loaded and indexed, and what arrived meanwhile is applied. */
  ready(runtime: SubqueryRuntime): void
  tableKey(table: { schema: string; name: string }): string
}

/** A move-in whose query snapshot may already hold transactions the stream has not delivered yet. */
interface PendingMoveIn {
  snapshot: XidSnapshot
  overrides: Map<number, Map<string, boolean>>
  /** Keys of the rows it inserted: their state in its snapshot already holds what such transactions did to them. */
  inserted: Set<string>
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
  private ready = false
  private waiting: TransactionPart[] = []
  private moveIns: PendingMoveIn[] = []
  private readonly encoder: InsertEncoder
  /** Columns read besides the encoder's: those the where's atoms read. */
  private readonly extraColumns: string[]

  constructor(
    readonly shape: Shape,
    private readonly pool: pg.Pool,
    private readonly stack: string,
    private readonly hooks: RuntimeHooks
  ) {
    const plan = shape.definition.subquery
    if (!plan) throw new Error(`shape ${shape.handle} has no subquery`)
    this.plan = plan
    this.views = new Views(plan)
    this.encoder = new InsertEncoder(shape.definition)
    this.extraColumns = plan.referenced.filter((name) => !this.encoder.columns.includes(name))
    const only = plan.disjuncts.length === 1 ? plan.disjuncts[0] : undefined
    const atom = only?.map((index) => plan.positions[index]).find((position) => position?.kind === 'sublink' && !position.negated && position.lhs.length === 1)
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
   * Reads the dependencies and (unless `withRows` is false) the shape's rows in the snapshot transaction, so that
   * views and rows agree; transactions the stream delivered meanwhile are applied afterwards, those in the snapshot skipped.
   */
  async readSnapshot(client: pg.PoolClient, info: SnapshotInfo, withRows: boolean, add: (rows: EncodedRows) => Promise<void>): Promise<void> {
    this.visibility = xidSnapshot(info.xmin, info.xmax, info.xipList)
    for (const [index, dependency] of this.plan.dependencies.entries()) {
      const columns = dependencyColumns(dependency)
      const where = dependency.nested ? '' : ` WHERE ${dependency.plan.sql}`
      const { rows } = await client.query<Row>({ text: `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(dependency.table)}${where}`, types: textRows })
      this.views.load(index, rows)
    }
    for (const value of this.indexValues()) this.hooks.indexMoved(this, [value], true)
    const draining = this.drain()
    if (withRows) {
      const columns = [...this.encoder.columns, ...this.extraColumns]
      await client.query(`DECLARE subquery_snapshot NO SCROLL CURSOR FOR SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(this.definition.table)} WHERE ${this.plan.sql}`)
      for (;;) {
        const query: QueryArrayConfig = { text: `FETCH ${FETCH_ROWS} FROM subquery_snapshot`, rowMode: 'array', types: textRows }
        const { rows } = await client.query<Array<string | null>>(query)
        if (rows.length === 0) break
        await add(encodeLines(rows.map((values) => this.insertLine(values, columns, {}))))
      }
    }
    await draining
  }

  /** Applies what the stream delivered while the snapshot was read, then takes transactions as they come. */
  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const part = this.waiting.shift() as TransactionPart
        await this.process(part)
      }
      this.ready = true
      this.hooks.ready(this)
    } catch (error) {
      this.hooks.failed(this, error as Error)
    }
  }

  /** An insert line for a row read from Postgres (snapshot, subset or move-in), with its tags and active_conditions. */
  insertLine(values: ReadonlyArray<string | null>, columns: readonly string[], headers: Record<string, unknown>, conditions?: boolean[]): string {
    const row: Record<string, string | null> = {}
    columns.forEach((name, index) => (row[name] = values[index] ?? null))
    const line = this.encoder.encode(values)
    const all = { operation: 'insert', relation: [this.definition.table.schema, this.definition.table.name], ...headers, ...this.tagHeaders(row, conditions) }
    return `{"headers":${JSON.stringify(all)},"key":${line.slice(this.encoder.prefix.length)}`
  }

  /**
   * A subset of this shape (its where ANDed with the subset's, ordered and paged): each row's active_conditions are
   * computed by Postgres in the subset's own snapshot, like its rows.
   */
  subsetQuery(subset: { whereSql: string | null; orderBySql: string | null; limit: number | null; offset: number | null }): { text: string; line(values: ReadonlyArray<string | null>, headers: Record<string, unknown>): string } {
    const columns = [...this.encoder.columns, ...this.extraColumns]
    const conditions = this.plan.positions.map((position) => `coalesce(${position.sql}, false)`)
    let text = `SELECT ${[...columns.map(quoteIdent), ...conditions].join(', ')} FROM ${qualifiedName(this.definition.table)} WHERE ${this.plan.sql}`
    if (subset.whereSql) text += ` AND (${subset.whereSql})`
    if (subset.orderBySql) text += ` ORDER BY ${subset.orderBySql}`
    if (subset.limit !== null) text += ` LIMIT ${subset.limit}`
    if (subset.offset !== null) text += ` OFFSET ${subset.offset}`
    return {
      text,
      line: (values, headers) => this.insertLine(values.slice(0, columns.length), columns, headers, values.slice(columns.length).map((value) => value === 't' || value === 'true'))
    }
  }

  // ---------- tags ----------

  tags(row: Row): string[] {
    const { positions } = this.plan
    return this.plan.disjuncts.map((conjuncts) =>
      positions
        .map((position, index) => {
          if (!conjuncts.includes(index)) return ''
          if (position.kind === 'plain') return '1'
          return slotHash(this.stack, this.shape.handle, position.lhs, position.lhs.map((name) => row[name] ?? null))
        })
        .join('/')
    )
  }

  private tagHeaders(row: Row, conditions = this.views.conditions(this.plan, row)): { tags: string[]; active_conditions: boolean[] } {
    return { tags: this.tags(row), active_conditions: conditions }
  }

  // ---------- live ----------

  /** Takes a transaction's part for this shape, in stream order. */
  async take(part: TransactionPart): Promise<void> {
    if (!this.ready) {
      this.waiting.push(part)
      return
    }
    await this.process(part)
  }

  private async process(part: TransactionPart): Promise<void> {
    if (this.shape.invalidated || (this.visibility && visibleIn(this.visibility, part.xid))) return
    const overrides = this.overridesFor(part.xid)
    const context: TransactionContext = { xid: part.xid, lsn: part.lsn }
    const messages: ShapeMessage[] = []
    for (const { change, op } of part.outer) if (!this.insertedByMoveIn(change)) messages.push(...this.convert(change, context, op, overrides))
    const last = messages[messages.length - 1]
    if (last) last.message.headers.last = true
    const entries: LogEntry[] = messages.map((entry) => ({ offset: { tx: part.lsn, op: entry.op }, line: JSON.stringify(entry.message) }))
    let op = part.ops
    const next = (line: string): void => void entries.push({ offset: { tx: part.lsn, op: op++ }, line })
    const moves = this.views.apply(part.inner, (dependency) => this.hooks.tableKey(dependency.table))
    const moveIns: Array<{ dependency: number; values: string[]; entered: boolean }> = []
    for (const [dependency, { entered, left }] of moves.entries()) {
      if (this.indexed?.dependency === dependency) {
        if (entered.length > 0) this.hooks.indexMoved(this, entered, true)
        if (left.length > 0) this.hooks.indexMoved(this, left, false)
      }
      for (const move of [{ values: entered, entered: true }, { values: left, entered: false }]) {
        if (move.values.length === 0) continue
        const positions = this.positionsOf(dependency)
        const outward = positions.filter((position) => position.negated === move.entered)
        if (outward.length > 0) next(JSON.stringify({ headers: { event: 'move-out', patterns: this.patterns(outward, move.values), txids: [part.xid] } }))
        if (positions.some((position) => position.negated !== move.entered)) moveIns.push({ dependency, ...move })
        this.forgetOverrides(dependency, move.values)
      }
    }
    for (const moveIn of moveIns) {
      const result = await this.moveIn(moveIn.dependency, moveIn.values, moveIn.entered)
      next(JSON.stringify({ headers: { event: 'move-in', patterns: this.patterns(this.positionsOf(moveIn.dependency).filter((position) => position.negated !== moveIn.entered), moveIn.values), txids: [part.xid] } }))
      for (const line of result.lines) next(line)
      if (result.lines.length > 0) next(snapshotEndMessage(result.snapshot))
    }
    if (entries.length > 0 && this.shape.receive(part.xid, entries)) this.hooks.appended(this.shape)
  }

  /** Whether a change (of a transaction some move-in's snapshot saw) is to a row that move-in inserted as it was then. */
  private insertedByMoveIn(change: RowChange): boolean {
    if (this.moveIns.length === 0) return false
    const { table } = this.definition
    const keys = [change.kind === 'insert' ? null : rowKey(table, change.old), change.kind === 'delete' ? null : rowKey(table, change.new)]
    return this.moveIns.some((pending) => keys.some((key) => key !== null && pending.inserted.has(key)))
  }

  /** A value that moves again is judged by the current view from then on, whatever earlier move-ins held. */
  private forgetOverrides(dependency: number, values: readonly string[]): void {
    for (const pending of this.moveIns) for (const value of values) pending.overrides.get(dependency)?.delete(value)
  }

  private positionsOf(dependency: number): Array<{ index: number; lhs: string[]; negated: boolean }> {
    return this.plan.positions.flatMap((position, index) => (position.kind === 'sublink' && position.dependency === dependency ? [{ index, lhs: position.lhs, negated: position.negated }] : []))
  }

  private patterns(positions: ReadonlyArray<{ index: number; lhs: string[] }>, values: readonly string[]): Array<{ pos: number; value: string }> {
    return positions.flatMap((position) => values.map((value) => ({ pos: position.index, value: slotHash(this.stack, this.shape.handle, position.lhs, keyValues(value, position.lhs.length)) })))
  }

  /**
   * Overrides for a transaction that an earlier move-in's query snapshot already saw: its changes to the moved rows
   * are judged with the view from before that move (the move-in rows already hold them). A transaction the snapshot
   * did not see ends that move-in's hold (the newest move-in's view wins where two hold the same value).
   */
  private overridesFor(xid: number): Overrides | undefined {
    this.moveIns = this.moveIns.filter((pending) => visibleIn(pending.snapshot, xid))
    if (this.moveIns.length === 0) return undefined
    const merged = new Map<number, Map<string, boolean>>()
    for (const pending of [...this.moveIns].reverse()) {
      for (const [dependency, values] of pending.overrides) {
        const into = merged.get(dependency) ?? new Map<string, boolean>()
        for (const [value, found] of values) if (!into.has(value)) into.set(value, found)
        merged.set(dependency, into)
      }
    }
    return merged
  }

  /**
   * The rows that a dependency's move brings in, read from Postgres: rows whose tested columns hold a moved value and
   * that the where admits with the new view but did not with the old one (rows already in get no insert; the move-in
   * event turns their condition on).
   */
  private async moveIn(dependency: number, values: string[], entered: boolean): Promise<{ lines: string[]; snapshot: SnapshotInfo }> {
    const positions = this.positionsOf(dependency)
    const params: string[][] = []
    const tests = positions.map(({ lhs }) => {
      const arrays = lhs.map((name, column) => {
        params.push(values.map((value) => textOfValue(this.definition.table, name, keyValues(value, lhs.length)[column] ?? '')))
        return `$${params.length}::text[]`
      })
      if (lhs.length === 1) return `${quoteIdent(lhs[0] ?? '')}::text = ANY(${arrays[0]})`
      return `ROW(${lhs.map((name) => `${quoteIdent(name)}::text`).join(', ')}) IN (SELECT * FROM unnest(${arrays.join(', ')}))`
    })
    const columns = [...this.encoder.columns, ...this.extraColumns]
    const text = `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(this.definition.table)} WHERE ${tests.join(' OR ')}`
    const before = new Map([[dependency, new Map(values.map((value) => [value, !entered]))]])
    return inSnapshot(this.pool, async (client, snapshot) => {
      const { rows } = await client.query<Array<string | null>>({ text, values: params, rowMode: 'array', types: textRows })
      const lines: string[] = []
      const inserted = new Set<string>()
      for (const values of rows) {
        const row: Record<string, string | null> = {}
        columns.forEach((name, index) => (row[name] = values[index] ?? null))
        const now = this.views.conditions(this.plan, row)
        if (!this.views.included(this.plan, now) || this.views.included(this.plan, this.views.conditions(this.plan, row, before))) continue
        lines.push(this.insertLine(values, columns, { is_move_in: true }, now))
        inserted.add(rowKey(this.definition.table, row))
      }
      this.moveIns.push({ snapshot: xidSnapshot(snapshot.xmin, snapshot.xmax, snapshot.xipList), overrides: before, inserted })
      return { lines, snapshot }
    })
  }

  /** A row change of the shape's table as messages, judged with the views before this transaction's moves. */
  private convert(change: RowChange, context: TransactionContext, op: number, overrides: Overrides | undefined): ShapeMessage[] {
    const { plan, views } = this
    const oldRow = change.kind === 'insert' ? null : change.old
    const newRow = change.kind === 'delete' ? null : change.new
    const oldConditions = oldRow && views.conditions(plan, oldRow, overrides)
    const newConditions = newRow && views.conditions(plan, newRow, overrides)
    const matches = { old: !!oldConditions && views.included(plan, oldConditions), new: !!newConditions && views.included(plan, newConditions) }
    const messages = messagesFor(this.definition, change, matches, context, op)
    const oldTags = oldRow ? this.tags(oldRow) : []
    const newTags = newRow ? this.tags(newRow) : []
    const removed = oldTags.filter((tag) => !newTags.includes(tag))
    if (messages.length === 0 && matches.old && matches.new && oldRow && newRow && (removed.length > 0 || JSON.stringify(oldConditions) !== JSON.stringify(newConditions))) {
      // no selected column changed, but what keeps the row in the shape did: the client needs the new tags
      const { table } = this.definition
      const value = Object.fromEntries(table.keyColumns.map((name) => [name, newRow[name] ?? null]))
      messages.push({ op, message: { headers: { operation: 'update', relation: [table.schema, table.name], txids: [context.xid], lsn: context.lsn.toString(), op_position: op }, key: rowKey(table, newRow), value } })
    }
    for (const { message } of messages) {
      const operation = message.headers.operation
      if (operation === 'insert') Object.assign(message.headers, { tags: newTags, active_conditions: newConditions })
      else if (operation === 'update') Object.assign(message.headers, { tags: newTags, removed_tags: removed, active_conditions: newConditions })
      else if (message.headers.key_change_to !== undefined) Object.assign(message.headers, { tags: [...newTags, ...removed], active_conditions: oldConditions })
      else Object.assign(message.headers, { tags: oldTags, active_conditions: oldConditions })
    }
    return messages
  }
}

/** What a dependency's query selects: its key, its selected columns and (for a nested one) what its where reads. */
function dependencyColumns(dependency: Dependency): string[] {
  const { table } = dependency
  const wanted = new Set([...table.keyColumns, ...dependency.columns, ...(dependency.nested ? dependency.plan.referenced : [])])
  return table.columns.map((column) => column.name).filter((name) => wanted.has(name))
}

/** A value as `column::text` prints it: pgoutput prints booleans t/f, the cast true/false. */
function textOfValue(table: Shape['definition']['table'], column: string, value: string): string {
  const isBool = table.columns.some((info) => info.name === column && info.type === 'bool' && !info.isArray)
  return isBool ? (value === 't' ? 'true' : value === 'f' ? 'false' : value) : value
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
