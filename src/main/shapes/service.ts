import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import pg from 'pg'
import { z } from 'zod'
import { syncPath, writeDurably } from '../fs/atomic-write'
import { type ShapeDefinition, identityHash, invalid, resolveDefinition } from './definition'
import { type RowChange, type ShapeMessage, messagesFor } from './messages'
import { startReplication, type ReplicatedTransaction, type ReplicationStream, type RelationInfo } from './replication'
import { dropOwnedReplication, folderSlotName, slotNamesIn } from './replication/ownership'
import { Shape, ShapeMetaSchema } from './shape'
import { type ShapeDamagedError, ShapeLog } from './shape-log'
import { SubqueryRegistry, definitionTables } from './subquery/registry'
import type { SubqueryRuntime } from './subquery/runtime'
import { type ReadRowsArgs, SnapshotCancelledError, TableChangedError, chunkPath, runSnapshot } from './snapshot'
import { TableChecks } from './table-check'
import { type TableInfo, columnsFingerprint, readTableInfo } from './table-info'
import { TimeSlices } from './time-slices'
import { type ShapeRouter, createShapeRouter, isCallersQueryError, loadParser } from './where'

export interface ShapeServiceOptions {
  databaseUrl: string
  /** Folder for this database's shapes and replication state. */
  dir: string
  /** Snapshot and log chunk size in bytes. */
  chunkBytes: number
  log(line: string): void
}

const StateSchema = z.object({ systemId: z.string(), slotName: z.string(), appliedLsn: z.string().nullable() })
type State = z.infer<typeof StateSchema>

/** What /v1/health reports: `active`, or why the server is not keeping up with Postgres. */
export type ServiceHealth = { status: 'active' } | { status: 'waiting' | 'stalled'; message: string }

/** Pause before making logs durable again after that failed (e.g. a full disk). */
const FLUSH_RETRY_MS = 1_000
/** Log files synced at once while a group of transactions is made durable. */
const SYNC_PARALLEL = 8
const DEFINITION_CACHE_SIZE = 2_000
/** Routing a large transaction lets the event loop run after this much work, so that no request waits behind it. */
const ROUTING_SLICE_MS = 10
const textTypes = { getTypeParser: () => (value: string) => value }

const tableKey = (schema: string, name: string): string => JSON.stringify([schema, name])

/** The service is stopping (the server shuts down or the database is switched): the request may be retried. */
export class ServiceStoppingError extends Error {
  override readonly name = 'ServiceStoppingError'
  constructor() {
    super('The shape server is stopping, please retry')
  }
}

/** A snapshot being built: `abort` cancels it, `done` settles once nothing of it writes any more. */
interface Build {
  abort: AbortController
  done: Promise<void>
}

/**
 * The shape server's engine for one database: shapes by definition and handle, their snapshots and logs on disk,
 * and the replication stream whose transactions are routed into them.
 */
export class ShapeService {
  private readonly shapes = new Map<string, Shape>()
  private readonly byHandle = new Map<string, Shape>()
  private readonly creating = new Map<string, Promise<Shape>>()
  private readonly router: ShapeRouter<Shape> = createShapeRouter<Shape>()
  private readonly subqueries: SubqueryRegistry
  private readonly tables = new Map<string, TableInfo>()
  private readonly tableChecks: TableChecks
  /** Oids of the tables known to be in the publication (a dropped and recreated table has a new oid and joins again). */
  private readonly publishedTables = new Set<number>()
  private readonly builds = new Map<Shape, Build>()
  /** Dropped shapes whose files are still being removed, by handle. */
  private readonly retiring = new Map<string, Promise<void>>()
  /** meta.json files being written for complete snapshots: a stop waits for them, so those shapes survive it. */
  private readonly metaWrites = new Set<Promise<void>>()
  private stopping = false
  /** Resolved definitions by request input, oldest first. */
  private readonly definitions = new Map<string, ShapeDefinition>()
  private replication: ReplicationStream | null = null
  /** The transaction being routed, which stop() lets finish. */
  private applying: Promise<void> = Promise.resolve()
  private lastLsn = 0n
  private counter = 0
  /** Shapes whose logs grew since they were last made durable. */
  private readonly unsynced = new Set<Shape>()
  /** What the next flush records as applied in state.json: the last applied commit, null after a lost slot. */
  private recordedLsn: bigint | null = null
  private flushing: Promise<void> | null = null
  private flushAgain = false
  private flushRetry: NodeJS.Timeout | null = null
  private stopped = false
  /** Why the last transaction could not be applied, or the last flush failed; cleared by the next success. */
  private applyFailure: string | null = null
  private flushFailure: string | null = null
  private replicationStatus: { state: 'streaming' | 'reconnecting'; error?: string } = { state: 'streaming' }

  private constructor(
    private readonly options: ShapeServiceOptions,
    readonly pool: pg.Pool,
    private state: State
  ) {
    this.tableChecks = new TableChecks(pool)
    this.subqueries = new SubqueryRegistry({
      pool,
      stack: state.slotName,
      appended: (shape) => {
        this.unsynced.add(shape)
        this.scheduleFlush()
      },
      failed: (shape, error) => {
        this.options.log(`subquery shape ${shape.handle} dropped: ${error.message}`)
        void this.drop(shape)
      }
    })
  }

  static async start(options: ShapeServiceOptions): Promise<ShapeService> {
    await loadParser()
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 8, types: textTypes, application_name: 'syncscope-shapes' })
    // Connections die with a restarted Postgres, idle or checked out; the next query opens a new one.
    pool.on('error', (error) => options.log(`shape pool: ${error.message}`))
    pool.on('connect', (client) => client.on('error', () => undefined))
    try {
      const state = await prepareState(pool, options.dir, options.log)
      const service = new ShapeService(options, pool, state)
      await service.restoreShapes()
      await service.startReplication()
      return service
    } catch (error) {
      await pool.end().catch(() => undefined)
      throw error
    }
  }

  private get shapesDir(): string {
    return join(this.options.dir, 'shapes')
  }

  private async startReplication(): Promise<void> {
    const applied = this.state.appliedLsn === null ? null : BigInt(this.state.appliedLsn)
    this.lastLsn = applied ?? 0n
    this.recordedLsn = applied
    this.replication = await startReplication({
      connectionString: this.options.databaseUrl,
      slotName: this.state.slotName,
      publicationName: this.state.slotName,
      appliedLsn: applied,
      awaitDurable: true,
      onTransaction: (tx) => (this.applying = this.applyTransaction(tx)),
      onPosition: (lsn) => this.subqueries.streamAt(lsn),
      onSlotLost: async (reason) => {
        this.options.log(`replication slot lost (${reason}): every shape must be refetched`)
        await Promise.all([...this.shapes.values()].map((shape) => this.drop(shape)))
        this.publishedTables.clear()
        // The new slot may follow a replaced cluster whose LSNs are lower: nothing applied so far counts any more.
        this.lastLsn = (await this.replication?.currentWalLsn().catch(() => 0n)) ?? 0n
        this.recordedLsn = null
        await this.flushNow()
      },
      onStatus: (status) => {
        // a failure retried with backoff is told once, not at every attempt
        if (status.error && status.error !== this.replicationStatus.error) this.options.log(`replication ${status.state}: ${status.error}`)
        this.replicationStatus = status
      },
      log: this.options.log
    })
    if (this.lastLsn === 0n) this.lastLsn = await this.replication.currentWalLsn()
  }

  /** `active` when the server follows Postgres and its logs are durable; else what it waits for or why it stalled. */
  health(): ServiceHealth {
    const stalled = this.applyFailure ?? this.flushFailure
    if (stalled) return { status: 'stalled', message: stalled }
    const { state, error } = this.replicationStatus
    if (state !== 'streaming') return { status: 'waiting', message: `waiting for Postgres: ${error ?? 'reconnecting'}` }
    return { status: 'active' }
  }

  /** The last commit LSN the server has processed: `global_last_seen_lsn`. */
  get globalLsn(): bigint {
    return this.lastLsn
  }

  /** `global_last_seen_lsn` for a shape's readers: a subquery shape's pending move-in holds it back. */
  seenLsn(shape: Shape): bigint {
    return this.subqueries.seenLsn(shape.handle, this.lastLsn)
  }

  get shapeCount(): number {
    return this.shapes.size
  }

  active(identity: string): Shape | undefined {
    return this.shapes.get(identity)
  }

  /** The live side of a subquery shape (its views and tags). */
  subqueryRuntime(handle: string): SubqueryRuntime | undefined {
    return this.subqueries.runtime(handle)
  }

  shapeByHandle(handle: string): Shape | undefined {
    return this.byHandle.get(handle)
  }

  /**
   * Table metadata, checked against the catalog on every call (one small query shared by the calls that come
   * together): a table dropped, recreated or with changed columns invalidates the shapes built on it before any
   * request could be answered from them.
   */
  async tableInfo(schema: string, name: string): Promise<TableInfo> {
    const key = tableKey(schema, name)
    const cached = this.tables.get(key)
    const current = await this.tableChecks.current(schema, name)
    if (cached && current?.oid === cached.oid && current.fingerprint === cached.fingerprint) return cached
    if (cached) await this.dropTableShapes(schema, name)
    const fresh = await readTableInfo(this.pool, schema, name)
    this.tables.set(key, fresh)
    return fresh
  }

  /** Resolves a request's shape; the compiled definition is reused while its table is unchanged. */
  async resolve(input: ShapeDefinition['input']): Promise<ShapeDefinition> {
    const key = JSON.stringify(input)
    const cached = this.definitions.get(key)
    if (cached) {
      const current = await Promise.all(definitionTables(cached).map(async (table) => (await this.tableInfo(table.schema, table.name)) === table))
      if (current.every(Boolean)) return cached
    }
    const definition = await resolveDefinition(input, (schema, name) => this.tableInfo(schema, name))
    if (this.definitions.size >= DEFINITION_CACHE_SIZE) this.definitions.delete(this.definitions.keys().next().value as string)
    this.definitions.set(key, definition)
    return definition
  }

  /** The active shape for a definition, created (with its snapshot started) when there is none. */
  async shapeFor(definition: ShapeDefinition): Promise<Shape> {
    if (this.stopping) throw new ServiceStoppingError()
    const existing = this.shapes.get(definition.identity)
    if (existing) return existing
    let creating = this.creating.get(definition.identity)
    if (!creating) {
      creating = this.create(definition).finally(() => this.creating.delete(definition.identity))
      this.creating.set(definition.identity, creating)
    }
    return creating
  }

  private async publish(table: TableInfo): Promise<void> {
    if (this.publishedTables.has(table.oid)) return
    await this.requireReplication().ensureTable(table.schema, table.name)
    this.publishedTables.add(table.oid)
  }

  private requireReplication(): ReplicationStream {
    if (!this.replication) throw new ServiceStoppingError()
    return this.replication
  }

  private newHandle(definition: ShapeDefinition): string {
    this.counter = (this.counter + 1) % 1000
    return `${identityHash(definition.identity)}-${Date.now() * 1000 + this.counter}`
  }

  private async create(definition: ShapeDefinition): Promise<Shape> {
    for (const table of definitionTables(definition)) {
      await this.publish(table).catch((error: unknown) => {
        // e.g. a temporary or unlogged table, which logical replication cannot follow
        if (isCallersQueryError(error)) throw invalid(table === definition.table ? 'table' : 'where', error.message)
        throw error
      })
    }
    const handle = this.newHandle(definition)
    const dir = join(this.shapesDir, handle)
    await mkdir(dir, { recursive: true })
    if (this.stopping) {
      await rm(dir, { recursive: true, force: true })
      throw new ServiceStoppingError()
    }
    const shape = new Shape(handle, definition, dir, ShapeLog.create(dir, this.options.chunkBytes), new Date().toISOString())
    this.register(shape)
    this.build(shape)
    return shape
  }

  /**
   * Starts the shape's snapshot. A table that changed under it drops the shape (its readers refetch); any other
   * failure is reported to the shape's readers as a failed shape. A dropped shape's snapshot is cancelled.
   */
  private build(shape: Shape): void {
    const abort = new AbortController()
    const withRows = shape.definition.log === 'full'
    const runtime = this.subqueries.runtime(shape.handle)
    const query = { definition: shape.definition, withRows, read: runtime && ((...args: ReadRowsArgs) => runtime.readSnapshot(args[0], args[1], withRows, args[2])) }
    const progress = {
      onSnapshot: (info: Parameters<Shape['snapshotTaken']>[0]) => shape.snapshotTaken(info),
      onChunk: (chunk: number, last: boolean, body: Parameters<Shape['chunkWritten']>[2]) => {
        shape.chunkWritten(chunk, last, body)
        if (last) {
          const saving = this.saveMeta(shape).catch((error: unknown) => {
            if (!shape.invalidated) this.options.log(`shape ${shape.handle} will not survive a restart: its meta.json could not be written (${(error as Error).message})`)
          })
          this.metaWrites.add(saving)
          void saving.finally(() => this.metaWrites.delete(saving))
        }
      }
    }
    const done = runSnapshot(this.pool, shape.dir, this.options.chunkBytes, query, progress, abort.signal).then(
      () => {
        this.builds.delete(shape)
      },
      (error: unknown) => {
        this.builds.delete(shape)
        if (error instanceof SnapshotCancelledError) return
        if (!(error instanceof TableChangedError)) {
          this.options.log(`snapshot of ${shape.handle} failed: ${(error as Error).message}`)
          shape.fail(error as Error)
        }
        void this.drop(shape)
      }
    )
    this.builds.set(shape, { abort, done })
  }

  private register(shape: Shape): void {
    const { definition } = shape
    this.shapes.set(definition.identity, shape)
    this.byHandle.set(shape.handle, shape)
    if (definition.subquery) this.subqueries.add(shape)
    else this.router.add(shape.handle, tableKey(definition.table.schema, definition.table.name), definition.where, shape)
  }

  /** Makes the snapshot and log durable, then records the shape in meta.json: a shape without one is not restored. */
  private async saveMeta(shape: Shape): Promise<void> {
    const meta = shape.meta()
    if (!meta || shape.invalidated) return
    for (let chunk = 0; chunk < meta.chunks.length; chunk++) await syncPath(chunkPath(shape.dir, chunk))
    await shape.log.sync()
    if (shape.invalidated) return
    await writeDurably(join(shape.dir, 'meta.json'), JSON.stringify(meta))
    await syncPath(this.shapesDir)
  }

  /** A shape whose files turned out damaged when read: dropped, so its clients refetch it from Postgres. */
  async dropDamaged(error: ShapeDamagedError): Promise<void> {
    const shape = this.byHandle.get(error.handle)
    this.options.log(`${error.message}: dropped, its clients get 409 and a fresh shape`)
    if (shape) await this.drop(shape)
  }

  /** Whether a shape of this handle was dropped and its files are still being removed. */
  isRetiring(handle: string): boolean {
    return this.retiring.has(handle)
  }

  /**
   * Removes a shape for good: its clients get 409 must-refetch on their next request. Its snapshot, if still being
   * built, is cancelled; its files are removed once nothing writes them. Resolves when they are gone.
   */
  async drop(shape: Shape): Promise<void> {
    if (this.byHandle.get(shape.handle) !== shape) return this.retiring.get(shape.handle)
    this.byHandle.delete(shape.handle)
    if (this.shapes.get(shape.definition.identity) === shape) this.shapes.delete(shape.definition.identity)
    this.router.remove(shape.handle)
    this.subqueries.remove(shape.handle)
    shape.invalidate()
    const removal = this.removeFiles(shape).finally(() => this.retiring.delete(shape.handle))
    this.retiring.set(shape.handle, removal)
    return removal
  }

  private async removeFiles(shape: Shape): Promise<void> {
    const build = this.builds.get(shape)
    build?.abort.abort()
    await build?.done
    // retried: a file of the shape may be created while its folder is removed (a chunk or meta.json being written)
    await rm(shape.dir, { recursive: true, force: true, maxRetries: 5 }).catch((error: unknown) => {
      this.options.log(`files of dropped shape ${shape.handle} not removed: ${(error as Error).message}`)
    })
  }

  private async dropTableShapes(schema: string, name: string): Promise<void> {
    this.tables.delete(tableKey(schema, name))
    const doomed = [...this.shapes.values()].filter((shape) => definitionTables(shape.definition).some((table) => table.schema === schema && table.name === name))
    await Promise.all(doomed.map((shape) => this.drop(shape)))
  }

  private async restoreShapes(): Promise<void> {
    await mkdir(this.shapesDir, { recursive: true })
    const durableLsn = this.state.appliedLsn === null ? 0n : BigInt(this.state.appliedLsn)
    for (const handle of await readdir(this.shapesDir)) {
      const dir = join(this.shapesDir, handle)
      const restored = await this.restoreShape(dir, durableLsn).catch((error: unknown) => {
        this.options.log(`shape ${handle} not restored: ${(error as Error).message}`)
        return null
      })
      if (restored) this.register(restored)
      else await rm(dir, { recursive: true, force: true })
    }
  }

  private async restoreShape(dir: string, durableLsn: bigint): Promise<Shape | null> {
    const metaPath = join(dir, 'meta.json')
    if (!existsSync(metaPath)) return null
    const meta = ShapeMetaSchema.safeParse(parseJson(readFileSync(metaPath, 'utf8')))
    if (!meta.success) throw new Error('meta.json is damaged or of an older format')
    const definition = await this.resolve(meta.data.input)
    if (definition.table.fingerprint !== meta.data.tableFingerprint || this.shapes.has(definition.identity)) return null
    // as the reference (1.7.10): a subquery shape's dependency views live in memory only, so it is refetched (409)
    if (definition.subquery) throw new Error('a shape with subqueries does not survive a restart: its clients refetch it')
    const shape = Shape.restore(meta.data, definition, dir, this.options.chunkBytes, durableLsn)
    this.publishedTables.add(definition.table.oid)
    return shape
  }

  /** A Relation message: shapes of the table built on other columns, or on an earlier table of that name, are stale. */
  private async relationSeen(relation: RelationInfo): Promise<void> {
    const key = tableKey(relation.schema, relation.table)
    const fingerprint = columnsFingerprint(relation.columns)
    const stale = [...this.shapes.values()].some(({ definition }) =>
      definitionTables(definition).some((table) => tableKey(table.schema, table.name) === key && (table.fingerprint !== fingerprint || table.oid !== relation.oid))
    )
    if (stale) await this.dropTableShapes(relation.schema, relation.table)
  }

  /**
   * Routes one committed transaction into the logs of the shapes it touches; a large one is routed in time slices
   * with the event loop free in between. The replication stream hands over the next transaction only once this promise
   * resolves, and acknowledges it to Postgres once a flush has made those logs and then state.json durable (see flush).
   */
  private async applyTransaction(tx: ReplicatedTransaction): Promise<void> {
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
    this.scheduleFlush()
  }

  private async routeTransaction(tx: ReplicatedTransaction): Promise<void> {
    const byShape = new Map<Shape, ShapeMessage[]>()
    const context = { xid: tx.xid, lsn: tx.commitLsn }
    const slices = new TimeSlices(ROUTING_SLICE_MS)
    let op = 0
    for (const change of tx.changes) {
      if (change.kind === 'relation') await this.relationSeen(change.relation)
      else if (change.kind === 'truncate') for (const relation of change.relations) await this.dropTableShapes(relation.schema, relation.table)
      else {
        this.routeChange(tableKey(change.relation.schema, change.relation.table), change, context, op, byShape)
        op += 2
      }
      await slices.yieldIfDue()
    }
    // Each shape takes its part of the transaction in one append; a shape dropped meanwhile takes nothing.
    for (const [shape, messages] of byShape) {
      const last = messages[messages.length - 1]
      if (last) last.message.headers.last = true
      this.unsynced.add(shape)
      shape.receive(tx.xid, messages.map((entry) => ({ offset: { tx: tx.commitLsn, op: entry.op }, line: JSON.stringify(entry.message) })))
      await slices.yieldIfDue()
    }
    this.subqueries.apply(tx)
  }

  /**
   * Group commit: the logs that grew are synced, then state.json records the last applied commit, then that commit is
   * reported durable (and so acknowledged to Postgres). Transactions applied meanwhile wait for the next flush, which
   * follows at once; nothing here blocks the event loop or the delivery of changes to clients.
   */
  private scheduleFlush(): void {
    if (this.flushing) {
      this.flushAgain = true
      return
    }
    this.flushing = this.flush().finally(() => {
      this.flushing = null
      if (this.flushAgain && !this.stopped) {
        this.flushAgain = false
        this.scheduleFlush()
      }
    })
  }

  private async flush(): Promise<void> {
    const recorded = this.subqueries.acknowledgeable(this.recordedLsn)
    const shapes = [...this.unsynced]
    this.unsynced.clear()
    try {
      for (let at = 0; at < shapes.length; at += SYNC_PARALLEL) await Promise.all(shapes.slice(at, at + SYNC_PARALLEL).map((shape) => shape.log.sync()))
      await this.saveState(recorded)
    } catch (error) {
      for (const shape of shapes) if (!shape.invalidated) this.unsynced.add(shape)
      const failure = `shape logs cannot be made durable (${(error as Error).message}): nothing after LSN ${this.state.appliedLsn ?? 0} is acknowledged; retrying`
      if (failure !== this.flushFailure) this.options.log(failure)
      this.flushFailure = failure
      if (!this.stopped) this.flushRetry ??= setTimeout(() => ((this.flushRetry = null), this.scheduleFlush()), FLUSH_RETRY_MS)
      return
    }
    this.flushFailure = null
    if (recorded !== null) this.replication?.durableThrough(recorded)
  }

  /** Waits for the flush under way, then flushes what is left. */
  private async flushNow(): Promise<void> {
    await this.flushing
    this.scheduleFlush()
    await this.flushing
  }

  private async saveState(appliedLsn: bigint | null): Promise<void> {
    const state = { ...this.state, appliedLsn: appliedLsn === null ? null : appliedLsn.toString() }
    await writeDurably(join(this.options.dir, 'state.json'), JSON.stringify(state))
    this.state = state
  }

  private routeChange(table: string, change: RowChange, context: { xid: number; lsn: bigint }, op: number, byShape: Map<Shape, ShapeMessage[]>): void {
    const routed = this.router.routeChange(table, change.kind === 'insert' ? null : change.old, change.kind === 'delete' ? null : change.new)
    for (const { value: shape, ...matches } of routed) {
      const messages = messagesFor(shape.definition, change, matches, context, op)
      if (messages.length === 0) continue
      const list = byShape.get(shape)
      if (list) list.push(...messages)
      else byShape.set(shape, messages)
    }
  }

  /**
   * Stops following Postgres and cancels the snapshots being built (their unfinished shapes are removed; complete
   * ones stay for the next start); resolves once no file is written any more and the connections are closed.
   */
  async stop(): Promise<void> {
    this.stopping = true
    await this.replication?.stop()
    this.replication = null
    await this.applying.catch(() => undefined)
    await this.flushNow().catch(() => undefined)
    await Promise.all(this.metaWrites)
    this.stopped = true
    if (this.flushRetry) clearTimeout(this.flushRetry)
    const unfinished = [...this.builds.keys()]
    for (const shape of this.shapes.values()) shape.invalidate()
    await Promise.all(unfinished.map((shape) => this.drop(shape)))
    await Promise.all(this.retiring.values())
    await this.pool.end().catch(() => undefined)
  }
}

/**
 * Reads (or starts) the replication state of this folder. An unreadable state, or one of another database cluster,
 * starts afresh: the shapes are dropped, and so are the slot and publication this folder owned, which would otherwise
 * hold back WAL for good.
 */
async function prepareState(pool: pg.Pool, dir: string, log: (line: string) => void): Promise<State> {
  const { rows } = await pool.query<{ system_id: string; database: string }>('SELECT system_identifier::text AS system_id, current_database() AS database FROM pg_control_system()')
  const systemId = `${rows[0]?.system_id ?? 'unknown'}/${rows[0]?.database ?? ''}`
  const path = join(dir, 'state.json')
  const text = existsSync(path) ? readFileSync(path, 'utf8') : null
  const saved = text === null ? null : StateSchema.safeParse(parseJson(text))
  if (saved?.success && saved.data.systemId === systemId) return saved.data
  if (text !== null && !saved?.success) log(`${path} is unreadable: its shapes are dropped and replication starts afresh`)
  const slotName = folderSlotName(dir)
  await dropOwnedReplication(pool, new Set([slotName, ...slotNamesIn(text ?? '')]), log)
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  const state: State = { systemId, slotName, appliedLsn: null }
  await writeDurably(path, JSON.stringify(state))
  return state
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}
