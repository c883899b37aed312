import type pg from 'pg'
import type { Row } from '../storage/messages'
import type { ReplicatedTransaction } from '../storage/replicated'
import type { Shape } from '../storage/shape'
import { type ShapeRouter, createShapeRouter } from '../../sql'
import type { CommitVisibility } from '../snapshot/commit-visibility'
import { dependencyWhere } from './plan'
import { setMember } from './set-map'
import { type InnerChange, type OuterChange, SubqueryRuntime, type TransactionPart, valueKey } from './runtime'

const tableKey = (table: { schema: string; name: string }): string => JSON.stringify([table.schema, table.name])

interface TableRoutes {
  /** column → value → shapes whose indexed dependency holds the value. */
  indexed: Map<string, Map<string, Set<SubqueryRuntime>>>
  /** Shapes on the table whose where cannot be indexed: every change is judged by them. */
  fallback: Set<SubqueryRuntime>
}

export interface SubqueryRegistryOptions {
  pool: pg.Pool
  /** Which delivered transactions a move-in's snapshot may still lack. */
  visibility: CommitVisibility
  /** Rows one shape's subquery results may hold in memory. */
  maxRows: number
  /** Part of every tag's hash, as the reference's stack id. */
  stack: string
  appended(shape: Shape): void
  failed(shape: Shape, error: Error): void
}

/**
 * The subquery shapes of a service: routes each replicated transaction's changes to them (changes to a shape's table
 * through an index of its dependency's values, changes to its subqueries' tables to every shape reading them), one
 * transaction at a time and in order.
 */
export class SubqueryRegistry {
  private readonly runtimes = new Map<string, SubqueryRuntime>()
  private readonly outer = new Map<string, TableRoutes>()
  /** Each shape's dependencies by their tables and wheres: a change of such a table reaches the shapes whose subquery result it alters. */
  private readonly inner: ShapeRouter<SubqueryRuntime> = createShapeRouter()
  /** Shapes with a move-in pending: they wait for the stream's position. */
  private readonly holding = new Set<SubqueryRuntime>()
  private position = 0n

  constructor(private readonly options: SubqueryRegistryOptions) {}

  get size(): number {
    return this.runtimes.size
  }

  runtime(handle: string): SubqueryRuntime | undefined {
    return this.runtimes.get(handle)
  }

  add(shape: Shape): SubqueryRuntime {
    const { pool, stack, maxRows } = this.options
    const runtime = new SubqueryRuntime(
      shape,
      { pool, stack, maxRows },
      {
        appended: (grown) => this.options.appended(grown),
        indexMoved: (moved, values, entered) => this.indexMoved(moved, values, entered),
        failed: (failed, error) => this.options.failed(failed.shape, error),
        routingChanged: (changed) => this.routingChanged(changed),
        streamPosition: () => this.position,
        checkSnapshot: () => this.options.visibility.check(),
        tableKey
      }
    )
    this.runtimes.set(shape.handle, runtime)
    const routes = this.routesOf(tableKey(shape.definition.table))
    // judged on every change of its table until its views are loaded and indexed (always, when its where has no index)
    routes.fallback.add(runtime)
    runtime.plan.dependencies.forEach((dependency, index) =>
      this.inner.add(`${shape.handle}/${index}`, tableKey(dependency.table), dependencyWhere(dependency), runtime)
    )
    return runtime
  }

  remove(handle: string): void {
    const runtime = this.runtimes.get(handle)
    if (!runtime) return
    runtime.close()
    this.runtimes.delete(handle)
    this.holding.delete(runtime)
    const key = tableKey(runtime.definition.table)
    const routes = this.outer.get(key)
    if (routes) {
      routes.fallback.delete(runtime)
      if (runtime.indexed) this.indexMoved(runtime, runtime.indexValues(), false)
      if (routes.fallback.size === 0 && routes.indexed.size === 0) this.outer.delete(key)
    }
    runtime.plan.dependencies.forEach((_, index) => this.inner.remove(`${handle}/${index}`))
  }

  /**
   * Every transaction ending at or before `lsn` has been applied: a pending move-in whose query read the WAL up to there
   * has seen all the transactions it will see.
   */
  streamAt(lsn: bigint): void {
    if (lsn <= this.position) return
    this.position = lsn
    for (const runtime of [...this.holding]) runtime.streamMoved()
  }

  /** The first commit LSN some subquery shape has not written all of (a move-in is pending), or null. */
  heldFrom(): bigint | null {
    let first: bigint | null = null
    for (const runtime of this.holding) {
      const held = runtime.heldFrom
      if (held !== null && (first === null || held < first)) first = held
    }
    return first
  }

  /** What may be acknowledged as applied: `lsn`, or less while a move-in holds transactions (they are replayed after a crash). */
  acknowledgeable(lsn: bigint | null): bigint | null {
    const held = this.heldFrom()
    return lsn === null || held === null || lsn < held ? lsn : held - 1n
  }

  /** `global_last_seen_lsn` for a shape's readers: never past what the shape holds behind a pending move-in. */
  seenLsn(handle: string, lsn: bigint): bigint {
    const held = this.runtimes.get(handle)?.heldFrom ?? null
    return held === null || lsn < held ? lsn : held - 1n
  }

  private routingChanged(runtime: SubqueryRuntime): void {
    if (this.runtimes.get(runtime.shape.handle) !== runtime) return
    if (runtime.heldFrom === null) this.holding.delete(runtime)
    else this.holding.add(runtime)
    const routes = this.outer.get(tableKey(runtime.definition.table))
    if (runtime.routedByIndex) routes?.fallback.delete(runtime)
    else routes?.fallback.add(runtime)
  }

  private routesOf(key: string): TableRoutes {
    let routes = this.outer.get(key)
    if (!routes) {
      routes = { indexed: new Map(), fallback: new Set() }
      this.outer.set(key, routes)
    }
    return routes
  }

  private indexMoved(runtime: SubqueryRuntime, values: readonly string[], entered: boolean): void {
    if (!runtime.indexed) return
    const routes = this.routesOf(tableKey(runtime.definition.table))
    let byValue = routes.indexed.get(runtime.indexed.column)
    if (!byValue) {
      byValue = new Map()
      routes.indexed.set(runtime.indexed.column, byValue)
    }
    for (const value of values) setMember(byValue, value, runtime, entered)
    if (byValue.size === 0) routes.indexed.delete(runtime.indexed.column)
  }

  private candidates(routes: TableRoutes, rows: ReadonlyArray<Row | null>): Set<SubqueryRuntime> {
    const found = new Set(routes.fallback)
    for (const [column, byValue] of routes.indexed) {
      for (const row of rows) {
        const key = row && valueKey(row, [column])
        if (key !== null && key !== undefined) for (const runtime of byValue.get(key) ?? []) found.add(runtime)
      }
    }
    return found
  }

  /** Routes a committed transaction to the subquery shapes it concerns (a shape with a move-in pending holds it). */
  apply(tx: ReplicatedTransaction): void {
    if (this.runtimes.size === 0) return
    const parts = new Map<SubqueryRuntime, TransactionPart>()
    const partOf = (runtime: SubqueryRuntime): TransactionPart => {
      let part = parts.get(runtime)
      if (!part) {
        part = { xid: tx.xid, lsn: tx.commitLsn, ops: 0, outer: [], inner: [] }
        parts.set(runtime, part)
      }
      return part
    }
    let op = 0
    for (const change of tx.changes) {
      if (change.kind === 'relation' || change.kind === 'truncate') continue
      const key = tableKey({ schema: change.relation.schema, name: change.relation.table })
      const old = change.kind === 'insert' ? null : change.old
      const next = change.kind === 'delete' ? null : change.new
      const routes = this.outer.get(key)
      if (routes)
        for (const runtime of this.candidates(routes, [old, next]))
          partOf(runtime).outer.push({ change, op } satisfies OuterChange)
      const readers =
        this.inner.size === 0 ? [] : new Set(this.inner.routeChange(key, old, next).map((routed) => routed.value))
      for (const runtime of readers) partOf(runtime).inner.push({ table: key, old, new: next } satisfies InnerChange)
      op += 2
    }
    for (const [runtime, part] of parts) {
      part.ops = op
      if (this.runtimes.get(runtime.shape.handle) !== runtime) continue
      runtime.take(part)
    }
  }
}
