import { join } from 'node:path'
import pg from 'pg'
import { shapeConnectionStream } from './snapshot/reused-read-socket'
import { loadParser } from '../sql'
import { CommitTimes } from './commit-times'
import { Catalog } from './definition/catalog'
import type { ResolvedShape } from './definition/definition'
import type { TableInfo } from './definition/table-info'
import { ShapeRegistry } from './registry'
import { startReplication, type ReplicationStream } from './replication'
import { type AppliedState, prepareState } from './replication/applied-state'
import { Collector } from './replication/collector'
import { SnapshotBuilder } from './snapshot/builder'
import type { Shape } from './storage/shape'
import type { ShapeDamagedError } from './storage/shape-log'
import type { ShapeLimitSettings } from './storage/shape-limits'
import { SubqueryRegistry } from './subquery/registry'
import type { SubqueryRuntime } from './subquery/runtime'

export { ServiceStoppingError } from './registry'

export interface ShapeServiceOptions {
  databaseUrl: string
  /** Folder for this database's shapes and replication state. */
  dir: string
  /** Snapshot and log chunk size in bytes. */
  chunkBytes: number
  /** How many shapes are kept and how much disk their files may take (least recently used ones are dropped). */
  limits: ShapeLimitSettings
  log(line: string): void
}

/** What /v1/health reports: `active`, or why the server is not keeping up with Postgres. */
export type ServiceHealth = { status: 'active' } | { status: 'waiting' | 'stalled'; message: string }

const textTypes = { getTypeParser: () => (value: string) => value }

/**
 * The shape server's engine for one database, wired from its stages: the catalog (tables and definitions), the
 * registry (shapes by identity and handle), the snapshot builder, and the collector that routes the replication
 * stream's transactions into the shapes' logs and acknowledges them once durable.
 */
export class ShapeService {
  private readonly catalog: Catalog
  private readonly registry: ShapeRegistry
  private readonly collector: Collector
  /** Recent transactions' commit times (GET /v1/debug/commit-times). */
  readonly commitTimes = new CommitTimes()
  private readonly snapshots: SnapshotBuilder
  private readonly subqueries: SubqueryRegistry
  private replication: ReplicationStream | null = null
  private replicationStatus: { state: 'streaming' | 'reconnecting'; error?: string } = { state: 'streaming' }
  /** Lets new shapes be created again once the replacement of a lost slot streams. */
  private slotReplaced: () => void = () => undefined

  private constructor(
    private readonly options: ShapeServiceOptions,
    readonly pool: pg.Pool,
    private readonly state: AppliedState
  ) {
    const { log, chunkBytes } = options
    const shapesDir = join(options.dir, 'shapes')
    this.subqueries = new SubqueryRegistry({
      pool,
      stack: state.slotName,
      appended: (shape) => this.collector.appended(shape),
      failed: (shape, error) => {
        log(`subquery shape ${shape.handle} dropped: ${error.message}`)
        void this.drop(shape)
      }
    })
    // a table found changed on a request: its shapes leave service at once, their files are removed meanwhile
    this.catalog = new Catalog(pool, (schema, name) => void this.registry.dropTable(schema, name))
    const snapshots = new SnapshotBuilder({
      pool,
      shapesDir,
      chunkBytes,
      log,
      broken: (shape) => void this.drop(shape)
    })
    this.registry = new ShapeRegistry({
      shapesDir,
      chunkBytes,
      log,
      subqueries: this.subqueries,
      snapshots,
      replication: () => this.replication,
      resolve: (input) => this.catalog.resolve(input),
      limits: options.limits
    })
    this.collector = new Collector({
      dir: options.dir,
      state,
      log,
      router: this.registry.router,
      subqueries: this.subqueries,
      shapesOnTable: (schema, name) => this.registry.onTable(schema, name),
      tableChanged: async (schema, name) => {
        this.catalog.forget(schema, name)
        await this.registry.dropTable(schema, name)
      },
      replication: () => this.replication
    })
    this.snapshots = snapshots
  }

  static async start(options: ShapeServiceOptions): Promise<ShapeService> {
    await loadParser()
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 8,
      types: textTypes,
      application_name: 'syncscope-shapes',
      stream: shapeConnectionStream
    })
    // Connections die with a restarted Postgres, idle or checked out; the next query opens a new one.
    pool.on('error', (error) => options.log(`shape pool: ${error.message}`))
    pool.on('connect', (client) => client.on('error', () => undefined))
    try {
      const state = await prepareState(pool, options.dir, options.log)
      const service = new ShapeService(options, pool, state)
      await service.registry.restore(service.collector.appliedLsn ?? 0n)
      await service.startReplication()
      return service
    } catch (error) {
      await pool.end().catch(() => undefined)
      throw error
    }
  }

  private async startReplication(): Promise<void> {
    this.replication = await startReplication({
      connectionString: this.options.databaseUrl,
      slotName: this.state.slotName,
      publicationName: this.state.slotName,
      appliedLsn: this.collector.appliedLsn,
      awaitDurable: true,
      onTransaction: (tx) => {
        this.commitTimes.committed(tx.commitLsn, tx.commitTime)
        return this.collector.onTransaction(tx)
      },
      onPosition: (lsn) => this.subqueries.streamAt(lsn),
      onSlotLost: async (reason) => {
        this.options.log(`replication slot lost (${reason}): every shape must be refetched`)
        this.registry.slotLost(new Promise((resolve) => (this.slotReplaced = resolve)))
        await Promise.all(this.registry.all().map((shape) => this.drop(shape)))
        await this.collector.restartAt((await this.replication?.currentWalLsn().catch(() => 0n)) ?? 0n)
      },
      onStatus: (status) => {
        if (status.state === 'streaming') this.slotReplaced()
        // a failure retried with backoff is told once, not at every attempt
        if (status.error && status.error !== this.replicationStatus.error)
          this.options.log(`replication ${status.state}: ${status.error}`)
        this.replicationStatus = status
      },
      log: this.options.log
    })
    if (this.collector.globalLsn === 0n) this.collector.startAt(await this.replication.currentWalLsn())
  }

  /** `active` when the server follows Postgres and its logs are durable; else what it waits for or why it stalled. */
  health(): ServiceHealth {
    const stalled = this.collector.failure
    if (stalled) return { status: 'stalled', message: stalled }
    const { state, error } = this.replicationStatus
    if (state !== 'streaming') return { status: 'waiting', message: `waiting for Postgres: ${error ?? 'reconnecting'}` }
    return { status: 'active' }
  }

  /** The last commit LSN the server has processed: `global_last_seen_lsn`. */
  get globalLsn(): bigint {
    return this.collector.globalLsn
  }

  /** `global_last_seen_lsn` for a shape's readers: a subquery shape's pending move-in holds it back. */
  seenLsn(shape: Shape): bigint {
    return this.subqueries.seenLsn(shape.handle, this.collector.globalLsn)
  }

  get shapeCount(): number {
    return this.registry.size
  }

  /** Bytes the shapes' snapshots and logs take (what --max-disk bounds). */
  get diskUsed(): number {
    return this.registry.diskUsed
  }

  /** `--max-shapes` and the disk budget in bytes. */
  get bounds(): { maxShapes: number; maxDiskBytes: number } {
    return this.registry.bounds
  }

  /** The active shapes, least recently used (the next to be dropped for the limits) first. */
  shapesByLastUse(): IterableIterator<Shape> {
    return this.registry.byLastUse()
  }

  /** The connection URL of the database it follows (with its password: never shown). */
  get databaseUrl(): string {
    return this.options.databaseUrl
  }

  /** The replication slot (and publication) this server follows Postgres through. */
  get slotName(): string {
    return this.state.slotName
  }

  active(identity: string): Shape | undefined {
    return this.registry.active(identity)
  }

  /** The live side of a subquery shape (its views and tags). */
  subqueryRuntime(handle: string): SubqueryRuntime | undefined {
    return this.subqueries.runtime(handle)
  }

  shapeByHandle(handle: string): Shape | undefined {
    return this.registry.byHandleOf(handle)
  }

  tableInfo(schema: string, name: string): Promise<TableInfo> {
    return this.catalog.tableInfo(schema, name)
  }

  resolve(input: ResolvedShape['input']): Promise<ResolvedShape> {
    return this.catalog.resolve(input)
  }

  shapeFor(definition: ResolvedShape): Promise<Shape> {
    return this.registry.shapeFor(definition)
  }

  /** A request used the shape: the least recently used ones are dropped first when there are too many. */
  used(shape: Shape): void {
    this.registry.used(shape)
  }

  /** A shape whose files turned out damaged when read: dropped, so its clients refetch it from Postgres. */
  async dropDamaged(error: ShapeDamagedError): Promise<void> {
    const shape = this.registry.byHandleOf(error.handle)
    this.options.log(`${error.message}: dropped, its clients get 409 and a fresh shape`)
    if (shape) await this.drop(shape)
  }

  isRetiring(handle: string): boolean {
    return this.registry.isRetiring(handle)
  }

  drop(shape: Shape): Promise<void> {
    return this.registry.drop(shape)
  }

  /** Drops every active shape (their clients refetch); resolves with how many once their files are removed. */
  async dropAll(): Promise<number> {
    const shapes = this.registry.all()
    await Promise.all(shapes.map((shape) => this.drop(shape)))
    return shapes.length
  }

  /**
   * Stops following Postgres and cancels the snapshots being built (their unfinished shapes are removed; complete
   * ones stay for the next start); resolves once no file is written any more and the connections are closed.
   */
  async stop(): Promise<void> {
    this.registry.refuseNew()
    this.slotReplaced()
    await this.replication?.stop()
    this.replication = null
    await this.collector.stop()
    await this.snapshots.recorded()
    await this.registry.stop()
    await this.pool.end().catch(() => undefined)
  }
}
