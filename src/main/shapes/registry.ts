import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { formatBytes } from '../../shared/format-bytes'
import { type ShapeRouter, createShapeRouter, isCallersQueryError } from '../sql'
import { tableKey } from './definition/catalog'
import { type ResolvedShape, identityHash, invalid } from './definition/definition'
import type { TableInfo } from './definition/table-info'
import type { ReplicationStream } from './replication'
import type { SnapshotBuilder } from './snapshot/builder'
import { parseJson } from './storage/json-file'
import { Shape, ShapeMetaSchema } from './storage/shape'
import { ShapeLog } from './storage/shape-log'
import { type ShapeLimitSettings, ShapeLimits, ShapeTooLargeError, defaultDiskBudget } from './storage/shape-limits'
import { type SubqueryRegistry, definitionTables } from './subquery/registry'

/** The service is stopping (the server shuts down or the database is switched): the request may be retried. */
export class ServiceStoppingError extends Error {
  override readonly name = 'ServiceStoppingError'
  constructor() {
    super('The shape server is stopping, please retry')
  }
}

export interface ShapeRegistryOptions {
  shapesDir: string
  chunkBytes: number
  log(line: string): void
  subqueries: SubqueryRegistry
  snapshots: SnapshotBuilder
  /** The replication stream, which adds a shape's tables to the publication; null once stopped. */
  replication(): ReplicationStream | null
  resolve(input: ResolvedShape['input']): Promise<ResolvedShape>
  limits: ShapeLimitSettings
}

/** How often the disk budget is checked against the logs' growth (snapshots are checked at every chunk). */
const DISK_CHECK_MS = 1_000

/**
 * The shapes of one database by identity and handle (the reference's ShapeCache): creates them (their snapshot
 * started), drops them (their files removed once nothing writes them), restores them from disk on start. Each active
 * shape is in the router (or the subquery registry), which the collector routes transactions with.
 */
export class ShapeRegistry {
  private readonly shapes = new Map<string, Shape>()
  private readonly byHandle = new Map<string, Shape>()
  /** The shapes built on each table (`tableKey`), its own or one its subqueries read. */
  private readonly byTable = new Map<string, Set<Shape>>()
  private readonly creating = new Map<string, Promise<Shape>>()
  readonly router: ShapeRouter<Shape> = createShapeRouter<Shape>()
  /** Oids of the tables known to be in the publication (a dropped and recreated table has a new oid and joins again). */
  private readonly publishedTables = new Set<number>()
  /** Dropped shapes whose files are still being removed, by handle. */
  private readonly retiring = new Map<string, Promise<void>>()
  private counter = 0
  private stopping = false
  /** While the replication slot is replaced: a snapshot taken before the new slot exists would miss what commits between. */
  private slotReplaced: Promise<void> = Promise.resolve()
  /** The shapes by last use, and the bounds on their number and disk; the disk budget is known once restored. */
  private readonly limits: ShapeLimits
  private readonly diskCheck: NodeJS.Timeout

  constructor(private readonly options: ShapeRegistryOptions) {
    this.limits = new ShapeLimits(options.limits.maxShapes, Infinity)
    this.diskCheck = setInterval(() => this.keepToDiskBudget(null), DISK_CHECK_MS)
    this.diskCheck.unref()
  }

  get size(): number {
    return this.shapes.size
  }

  all(): Shape[] {
    return [...this.shapes.values()]
  }

  active(identity: string): Shape | undefined {
    return this.shapes.get(identity)
  }

  byHandleOf(handle: string): Shape | undefined {
    return this.byHandle.get(handle)
  }

  /** The active shapes built on the table: on it, or with a subquery that reads it. */
  onTable(schema: string, name: string): Shape[] {
    return [...(this.byTable.get(tableKey(schema, name)) ?? [])]
  }

  /** Whether a shape of this handle was dropped and its files are still being removed. */
  isRetiring(handle: string): boolean {
    return this.retiring.has(handle)
  }

  /** A request used the shape: the last to be dropped for the limits. */
  used(shape: Shape): void {
    this.limits.used(shape)
  }

  /** The active shape for a definition, created (with its snapshot started) when there is none. */
  async shapeFor(definition: ResolvedShape): Promise<Shape> {
    if (this.stopping) throw new ServiceStoppingError()
    const existing = this.shapes.get(definition.identity)
    if (existing) {
      this.limits.used(existing)
      return existing
    }
    const refused = this.limits.refusal(definition.identity)
    if (refused) throw refused
    let creating = this.creating.get(definition.identity)
    if (!creating) {
      creating = this.create(definition).finally(() => this.creating.delete(definition.identity))
      this.creating.set(definition.identity, creating)
    }
    return creating
  }

  private async publish(table: TableInfo): Promise<void> {
    if (this.publishedTables.has(table.oid)) return
    const replication = this.options.replication()
    if (!replication) throw new ServiceStoppingError()
    await replication.ensureTable(table.schema, table.name)
    this.publishedTables.add(table.oid)
  }

  /** The slot is being replaced: no table is in its publication yet, and new shapes wait until `replaced` settles. */
  slotLost(replaced: Promise<void>): void {
    this.publishedTables.clear()
    this.slotReplaced = replaced
  }

  private newHandle(definition: ResolvedShape): string {
    this.counter = (this.counter + 1) % 1000
    return `${identityHash(definition.identity)}-${Date.now() * 1000 + this.counter}`
  }

  private async create(definition: ResolvedShape): Promise<Shape> {
    await this.slotReplaced
    for (const table of definitionTables(definition)) {
      await this.publish(table).catch((error: unknown) => {
        // e.g. a temporary or unlogged table, which logical replication cannot follow
        if (isCallersQueryError(error)) throw invalid(table === definition.table ? 'table' : 'where', error.message)
        throw error
      })
    }
    const handle = this.newHandle(definition)
    const dir = join(this.options.shapesDir, handle)
    await mkdir(dir, { recursive: true })
    if (this.stopping) {
      await rm(dir, { recursive: true, force: true })
      throw new ServiceStoppingError()
    }
    const shape = new Shape(
      handle,
      definition,
      dir,
      ShapeLog.create(dir, this.options.chunkBytes),
      new Date().toISOString()
    )
    this.register(shape)
    // the request that creates a shape uses it
    this.limits.used(shape)
    this.keepToShapeLimit(shape)
    this.options.snapshots.start(shape, this.options.subqueries.runtime(shape.handle))
    return shape
  }

  /** A shape's snapshot grew (one function for every shape, so an idle shape costs no closure of its own). */
  private readonly diskGrowth = (grown: Shape): void => {
    try {
      this.keepToDiskBudget(grown)
    } catch (error) {
      if (error instanceof ShapeTooLargeError) this.limits.refuse(grown.definition.identity, error)
      throw error
    }
  }

  /** Past --max-shapes, the least recently used shapes (never `keep`, the one just made) are dropped: they refetch. */
  private keepToShapeLimit(keep: Shape | null): void {
    const victims = this.limits.overCount(keep)
    if (victims.length === 0) return
    this.options.log(
      `${victims.length} least recently used shape(s) dropped: more than --max-shapes ${this.limits.maxShapes}; their clients refetch`
    )
    for (const victim of victims) void this.drop(victim)
  }

  /**
   * Past the disk budget, the least recently used shapes (never `growing`, whose snapshot grows) are dropped; throws
   * ShapeTooLargeError when `growing` alone does not fit, which fails its snapshot.
   */
  private keepToDiskBudget(growing: Shape | null): void {
    const victims = this.limits.overDisk(growing)
    if (victims.length === 0) return
    this.options.log(
      `${victims.length} least recently used shape(s) dropped: the shape logs passed --max-disk ${formatBytes(this.limits.maxDiskBytes)}; their clients refetch`
    )
    for (const victim of victims) void this.drop(victim)
  }

  private register(shape: Shape): void {
    const { definition } = shape
    this.shapes.set(definition.identity, shape)
    this.byHandle.set(shape.handle, shape)
    this.limits.add(shape)
    shape.onDiskGrowth = this.diskGrowth
    for (const key of tableKeys(definition)) {
      const shapes = this.byTable.get(key)
      if (shapes) shapes.add(shape)
      else this.byTable.set(key, new Set([shape]))
    }
    if (definition.subquery) this.options.subqueries.add(shape)
    else
      this.router.add(shape.handle, tableKey(definition.table.schema, definition.table.name), definition.where, shape)
  }

  /**
   * Removes a shape for good: its clients get 409 must-refetch on their next request. Its snapshot, if still being
   * built, is cancelled; its files are removed once nothing writes them. Resolves when they are gone.
   */
  async drop(shape: Shape): Promise<void> {
    if (this.byHandle.get(shape.handle) !== shape) return this.retiring.get(shape.handle)
    this.byHandle.delete(shape.handle)
    this.limits.remove(shape)
    shape.onDiskGrowth = null
    if (this.shapes.get(shape.definition.identity) === shape) this.shapes.delete(shape.definition.identity)
    for (const key of tableKeys(shape.definition)) {
      const shapes = this.byTable.get(key)
      shapes?.delete(shape)
      if (shapes?.size === 0) this.byTable.delete(key)
    }
    this.router.remove(shape.handle)
    this.options.subqueries.remove(shape.handle)
    shape.invalidate()
    const removal = this.removeFiles(shape).finally(() => this.retiring.delete(shape.handle))
    this.retiring.set(shape.handle, removal)
    return removal
  }

  private async removeFiles(shape: Shape): Promise<void> {
    await this.options.snapshots.cancel(shape)
    shape.log.close()
    // retried: a file of the shape may be created while its folder is removed (a chunk or meta.json being written)
    await rm(shape.dir, { recursive: true, force: true, maxRetries: 5 }).catch((error: unknown) => {
      this.options.log(`files of dropped shape ${shape.handle} not removed: ${(error as Error).message}`)
    })
  }

  /** Drops every shape built on the table; resolves once their files are removed. */
  async dropTable(schema: string, name: string): Promise<void> {
    await Promise.all(this.onTable(schema, name).map((shape) => this.drop(shape)))
  }

  /**
   * Restores the shapes of an earlier run, oldest first (the first to be dropped for the limits), then settles the disk
   * budget and keeps to both limits.
   */
  async restore(durableLsn: bigint): Promise<void> {
    const { shapesDir } = this.options
    await mkdir(shapesDir, { recursive: true })
    for (const handle of (await readdir(shapesDir)).sort((a, b) => createdAt(a) - createdAt(b))) {
      const dir = join(shapesDir, handle)
      const restored = await this.restoreShape(dir, durableLsn).catch((error: unknown) => {
        this.options.log(`shape ${handle} not restored: ${(error as Error).message}`)
        return null
      })
      if (restored) this.register(restored)
      else await rm(dir, { recursive: true, force: true })
    }
    const used = this.limits.diskUsed()
    this.limits.maxDiskBytes = this.options.limits.maxDiskBytes ?? (await defaultDiskBudget(shapesDir, used))
    this.options.log(
      `shape logs: ${formatBytes(used)} of their ${formatBytes(this.limits.maxDiskBytes)} budget (--max-disk), ${this.limits.size} of at most ${this.limits.maxShapes} shapes (--max-shapes)`
    )
    this.keepToShapeLimit(null)
    this.keepToDiskBudget(null)
  }

  /** Bytes the active shapes' snapshots and logs take. */
  get diskUsed(): number {
    return this.limits.diskUsed()
  }

  /** The active shapes, the next to be dropped for the limits first. */
  byLastUse(): IterableIterator<Shape> {
    return this.limits.byLastUse()
  }

  /** `--max-shapes` and the disk budget in bytes (`--max-disk`, or what was chosen on start; Infinity before). */
  get bounds(): { maxShapes: number; maxDiskBytes: number } {
    return { maxShapes: this.limits.maxShapes, maxDiskBytes: this.limits.maxDiskBytes }
  }

  private async restoreShape(dir: string, durableLsn: bigint): Promise<Shape | null> {
    const metaPath = join(dir, 'meta.json')
    if (!existsSync(metaPath)) return null
    const meta = ShapeMetaSchema.safeParse(parseJson(readFileSync(metaPath, 'utf8')))
    if (!meta.success) throw new Error('meta.json is damaged or of an older format')
    const definition = await this.options.resolve(meta.data.input)
    if (definition.table.fingerprint !== meta.data.tableFingerprint || this.shapes.has(definition.identity)) return null
    // as the reference (1.7.10): a subquery shape's dependency views live in memory only, so it is refetched (409)
    if (definition.subquery)
      throw new Error('a shape with subqueries does not survive a restart: its clients refetch it')
    const shape = Shape.restore(meta.data, definition, dir, this.options.chunkBytes, durableLsn)
    this.publishedTables.add(definition.table.oid)
    return shape
  }

  /**
   * Takes every shape out of service and removes those whose snapshot is unfinished (complete ones stay for the next
   * start); resolves once no file is written any more. Called after refuseNew.
   */
  async stop(): Promise<void> {
    clearInterval(this.diskCheck)
    const unfinished = this.options.snapshots.building()
    for (const shape of this.shapes.values()) shape.invalidate()
    await Promise.all(unfinished.map((shape) => this.drop(shape)))
    await Promise.all(this.retiring.values())
    for (const shape of this.shapes.values()) shape.log.close()
  }

  /** New shapes are refused from now on (the service stops). */
  refuseNew(): void {
    this.stopping = true
  }
}

/** When a shape was made, from its handle (`<hash>-<microseconds>`); 0 for a folder of another name. */
const createdAt = (handle: string): number => Number(/-(\d+)$/.exec(handle)?.[1] ?? 0)

const tableKeys = (definition: ResolvedShape): Set<string> =>
  new Set(definitionTables(definition).map((table) => tableKey(table.schema, table.name)))
