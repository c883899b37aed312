import type { ShapeRouter } from '../../sql'
import { tableKey } from '../definition/catalog'
import { columnsFingerprint } from '../definition/table-info'
import { type RowChange, type ShapeMessage, messagesFor } from '../storage/messages'
import type { Shape } from '../storage/shape'
import { definitionTables } from '../definition/definition'
import type { SubqueryRegistry } from '../subquery/registry'
import { type AppliedState, saveState } from './applied-state'
import {
  FLUSH_IDLE,
  type FlushEffect,
  type FlushEvent,
  type FlushState,
  flushFailureOf,
  nextFlushState
} from './flush-state'
import type { CommitVisibility } from '../snapshot/commit-visibility'
import { TimeSlices } from './time-slices'
import type { RelationInfo, ReplicatedTransaction, ReplicationStream } from './types'

/** Pause before making logs durable again after that failed (e.g. a full disk). */
const FLUSH_RETRY_MS = 1_000
/** Log files synced at once while a group of transactions is made durable. */
const SYNC_PARALLEL = 8
/** Routing a large transaction lets the event loop run after this much work, so that no request waits behind it. */
export const ROUTING_SLICE_MS = 5

export interface CollectorOptions {
  /** The folder of state.json. */
  dir: string
  state: AppliedState
  log(line: string): void
  router: ShapeRouter<Shape>
  subqueries: SubqueryRegistry
  /** Told of every transaction taken, so that new snapshots can be made to include them. */
  visibility: CommitVisibility
  /** The active shapes built on a table: on it, or with a subquery that reads it. */
  shapesOnTable(schema: string, name: string): Shape[]
  /** The table changed (or was truncated): the shapes built on it are dropped; resolves once they are. */
  tableChanged(schema: string, name: string): Promise<void>
  /** Where acknowledgements go; null once stopped. */
  replication(): ReplicationStream | null
}

/**
 * Routes committed transactions into the logs of the shapes they touch (the reference's ShapeLogCollector), and is
 * the one place that decides which commit is acknowledged to Postgres: the last one whose appends, and then
 * state.json, are durable.
 */
export class Collector {
  private state: AppliedState
  /** The transaction being routed, which stop() lets finish. */
  private applying: Promise<void> = Promise.resolve()
  private lastLsn: bigint
  /** Shapes whose logs grew since they were last made durable. */
  private readonly unsynced = new Set<Shape>()
  /** What the next flush records as applied in state.json: the last applied commit, null after a lost slot. */
  private recordedLsn: bigint | null
  /** The group commit's machine (flush-state.ts): the collector carries out its effects. */
  private flushState: FlushState = FLUSH_IDLE
  private flushRetry: NodeJS.Timeout | null = null
  /** Waiting for the flushes under way to end (flushNow). */
  private flushWaiters: Array<() => void> = []
  /** Why the last transaction could not be applied; cleared by the next success. */
  private applyFailure: string | null = null

  constructor(private readonly options: CollectorOptions) {
    this.state = options.state
    this.recordedLsn = this.appliedLsn
    this.lastLsn = this.appliedLsn ?? 0n
  }

  /** The last commit state.json records as durably applied; null when none is. */
  get appliedLsn(): bigint | null {
    return this.state.appliedLsn === null ? null : BigInt(this.state.appliedLsn)
  }

  /** The last commit LSN the server has processed: `global_last_seen_lsn`. */
  get globalLsn(): bigint {
    return this.lastLsn
  }

  /** Why the logs cannot be written or made durable; null when they can. */
  get failure(): string | null {
    return this.applyFailure ?? flushFailureOf(this.flushState)
  }

  /** Where the stream starts when nothing was applied yet (nor meanwhile). */
  startAt(lsn: bigint): void {
    if (this.lastLsn === 0n) this.lastLsn = lsn
  }

  /** A shape's log grew outside a transaction's routing (a subquery shape's move): it is made durable with the next. */
  appended(shape: Shape): void {
    this.unsynced.add(shape)
    this.flushEvent({ kind: 'requested' })
  }

  /** The replication stream's handler: resolves once the transaction is in the logs (not yet durable). */
  onTransaction(tx: ReplicatedTransaction): Promise<void> {
    this.applying = this.applyTransaction(tx)
    return this.applying
  }

  /** A new slot, maybe of a replaced cluster whose LSNs are lower: nothing applied so far counts any more. */
  async restartAt(lsn: bigint): Promise<void> {
    this.lastLsn = lsn
    this.recordedLsn = null
    await this.flushNow()
  }

  /**
   * Routes one committed transaction into the logs of the shapes it touches; a large one is routed in time slices
   * with the event loop free in between. The replication stream hands over the next transaction only once this promise
   * resolves, and acknowledges it to Postgres once a flush has made those logs and then state.json durable (see flush).
   */
  private async applyTransaction(tx: ReplicatedTransaction): Promise<void> {
    this.options.visibility.taken(tx.xid, tx.commitLsn)
    try {
      await this.routeTransaction(tx)
    } catch (error) {
      const failure = `shape logs cannot be written (${(error as Error).message}): nothing after LSN ${this.lastLsn} is acknowledged; retrying until it works (is the disk of ${this.options.dir} full?)`
      if (failure !== this.applyFailure) this.options.log(failure)
      this.applyFailure = failure
      throw error
    }
    if (this.applyFailure) this.options.log('shape logs are written again: replication goes on')
    this.applyFailure = null
    this.lastLsn = tx.commitLsn
    this.recordedLsn = tx.commitLsn
    this.flushEvent({ kind: 'requested' })
  }

  private async routeTransaction(tx: ReplicatedTransaction): Promise<void> {
    const byShape = new Map<Shape, ShapeMessage[]>()
    const context = { xid: tx.xid, lsn: tx.commitLsn }
    const slices = new TimeSlices(ROUTING_SLICE_MS)
    let op = 0
    for (const change of tx.changes) {
      if (change.kind === 'relation') await this.relationSeen(change.relation)
      else if (change.kind === 'truncate')
        for (const relation of change.relations) await this.options.tableChanged(relation.schema, relation.table)
      else {
        await this.routeChange(
          tableKey(change.relation.schema, change.relation.table),
          change,
          context,
          op,
          byShape,
          slices
        )
        op += 2
      }
      await slices.yieldIfDue()
    }
    // Each shape takes its part of the transaction in one append; a shape dropped meanwhile takes nothing.
    for (const [shape, messages] of byShape) {
      const last = messages[messages.length - 1]
      if (last) last.message.headers.last = true
      this.unsynced.add(shape)
      shape.receive(
        tx.xid,
        messages.map((entry) => ({ offset: { tx: tx.commitLsn, op: entry.op }, line: JSON.stringify(entry.message) }))
      )
      await slices.yieldIfDue()
    }
    this.options.subqueries.apply(tx)
  }

  /** One row change: the shapes it concerns are judged in slices (a change may concern many costly wheres). */
  private async routeChange(
    table: string,
    change: RowChange,
    context: { xid: number; lsn: bigint },
    op: number,
    byShape: Map<Shape, ShapeMessage[]>,
    slices: TimeSlices
  ): Promise<void> {
    const route = this.options.router.startChange(
      table,
      change.kind === 'insert' ? null : change.old,
      change.kind === 'delete' ? null : change.new
    )
    while (!route.judge(slices.due)) await slices.yield()
    for (const { value: shape, ...matches } of route.routed) {
      const messages = messagesFor(shape.definition, change, matches, context, op)
      if (messages.length === 0) continue
      const list = byShape.get(shape)
      if (list) list.push(...messages)
      else byShape.set(shape, messages)
    }
  }

  /** A Relation message: shapes of the table built on other columns, or on an earlier table of that name, are stale. */
  private async relationSeen(relation: RelationInfo): Promise<void> {
    const key = tableKey(relation.schema, relation.table)
    const fingerprint = columnsFingerprint(relation.columns)
    const stale = this.options
      .shapesOnTable(relation.schema, relation.table)
      .some(({ definition }) =>
        definitionTables(definition).some(
          (table) =>
            tableKey(table.schema, table.name) === key &&
            (table.fingerprint !== fingerprint || table.oid !== relation.oid)
        )
      )
    if (stale) await this.options.tableChanged(relation.schema, relation.table)
  }

  private flushEvent(event: FlushEvent): void {
    const { state, effects } = nextFlushState(this.flushState, event)
    this.flushState = state
    for (const effect of effects) this.flushEffect(effect)
    if (state.phase === 'flushing') return
    const waiters = this.flushWaiters
    this.flushWaiters = []
    for (const resolve of waiters) resolve()
  }

  private flushEffect(effect: FlushEffect): void {
    switch (effect.kind) {
      case 'flush':
        void this.flush()
          .catch((error: unknown) => `shape logs cannot be made durable: ${(error as Error).message}`)
          .then((failure) =>
            this.flushEvent(failure === null ? { kind: 'succeeded' } : { kind: 'failed', message: failure })
          )
        return
      case 'retry-later':
        this.flushRetry = setTimeout(() => {
          this.flushRetry = null
          this.flushEvent({ kind: 'retry-due' })
        }, FLUSH_RETRY_MS)
        return
      case 'cancel-retry':
        if (this.flushRetry) clearTimeout(this.flushRetry)
        this.flushRetry = null
        return
      case 'log':
        this.options.log(effect.line)
    }
  }

  /**
   * Group commit: the logs that grew are synced, then state.json records the last applied commit, then that commit is
   * reported durable (and so acknowledged to Postgres). Transactions applied meanwhile wait for the next flush, which
   * follows at once; nothing here blocks the event loop or the delivery of changes to clients. Resolves with why it
   * failed, or null.
   */
  private async flush(): Promise<string | null> {
    const recorded = this.options.subqueries.acknowledgeable(this.recordedLsn)
    const shapes = [...this.unsynced]
    this.unsynced.clear()
    try {
      for (let at = 0; at < shapes.length; at += SYNC_PARALLEL)
        await Promise.all(shapes.slice(at, at + SYNC_PARALLEL).map((shape) => shape.log.sync()))
      const state = { ...this.state, appliedLsn: recorded === null ? null : recorded.toString() }
      await saveState(this.options.dir, state)
      this.state = state
    } catch (error) {
      for (const shape of shapes) if (!shape.invalidated) this.unsynced.add(shape)
      return `shape logs cannot be made durable (${(error as Error).message}): nothing after LSN ${this.state.appliedLsn ?? 0} is acknowledged; retrying`
    }
    if (recorded !== null) this.options.replication()?.durableThrough(recorded)
    return null
  }

  /** Flushes what is applied, and waits until no flush runs any more. */
  private flushNow(): Promise<void> {
    const settled = new Promise<void>((resolve) => this.flushWaiters.push(resolve))
    this.flushEvent({ kind: 'requested' })
    return settled
  }

  /** Once the stream stopped handing over transactions: lets the one being routed finish and makes all durable. */
  async stop(): Promise<void> {
    await this.applying.catch(() => undefined)
    await this.flushNow()
    this.flushEvent({ kind: 'stop' })
  }
}
