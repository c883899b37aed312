import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import pg from 'pg'
import { z } from 'zod'
import { type ShapeDefinition, identityHash, resolveDefinition } from './definition'
import { type RowChange, type ShapeMessage, messagesFor } from './messages'
import { startReplication, type ReplicatedTransaction, type ReplicationStream, type RelationInfo } from './replication'
import { Shape, ShapeMetaSchema } from './shape'
import { ShapeLog } from './shape-log'
import { runSnapshot } from './snapshot'
import { type TableInfo, columnsFingerprint, readTableInfo } from './table-info'
import { TimeSlices } from './time-slices'
import { type ShapeRouter, createShapeRouter, loadParser } from './where'

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

const TABLE_INFO_TTL_MS = 2_000
const DEFINITION_CACHE_SIZE = 2_000
/** Routing a large transaction lets the event loop run after this much work, so that no request waits behind it. */
const ROUTING_SLICE_MS = 10
const textTypes = { getTypeParser: () => (value: string) => value }

const tableKey = (schema: string, name: string): string => JSON.stringify([schema, name])

/**
 * The shape server's engine for one database: shapes by definition and handle, their snapshots and logs on disk,
 * and the replication stream whose transactions are routed into them.
 */
export class ShapeService {
  private readonly shapes = new Map<string, Shape>()
  private readonly byHandle = new Map<string, Shape>()
  private readonly creating = new Map<string, Promise<Shape>>()
  private readonly router: ShapeRouter<Shape> = createShapeRouter<Shape>()
  private readonly tables = new Map<string, { info: TableInfo; at: number }>()
  private readonly publishedTables = new Set<string>()
  /** Resolved definitions by request input, oldest first. */
  private readonly definitions = new Map<string, ShapeDefinition>()
  private replication: ReplicationStream | null = null
  /** The transaction being routed, which stop() lets finish. */
  private applying: Promise<void> = Promise.resolve()
  private lastLsn = 0n
  private counter = 0

  private constructor(
    private readonly options: ShapeServiceOptions,
    readonly pool: pg.Pool,
    private state: State
  ) {}

  static async start(options: ShapeServiceOptions): Promise<ShapeService> {
    await loadParser()
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 8, types: textTypes, application_name: 'syncscope-shapes' })
    // Connections die with a restarted Postgres, idle or checked out; the next query opens a new one.
    pool.on('error', (error) => options.log(`shape pool: ${error.message}`))
    pool.on('connect', (client) => client.on('error', () => undefined))
    try {
      const state = await prepareState(pool, options.dir)
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
    this.replication = await startReplication({
      connectionString: this.options.databaseUrl,
      slotName: this.state.slotName,
      publicationName: this.state.slotName,
      appliedLsn: applied,
      onTransaction: (tx) => (this.applying = this.applyTransaction(tx)),
      onSlotLost: async (reason) => {
        this.options.log(`replication slot lost (${reason}): every shape must be refetched`)
        for (const shape of [...this.shapes.values()]) await this.drop(shape)
        this.publishedTables.clear()
        // The new slot may follow a replaced cluster whose LSNs are lower: nothing applied so far counts any more.
        this.lastLsn = (await this.replication?.currentWalLsn().catch(() => 0n)) ?? 0n
        this.saveState(null)
      },
      onStatus: (status) => status.error && this.options.log(`replication ${status.state}: ${status.error}`),
      log: this.options.log
    })
    if (this.lastLsn === 0n) this.lastLsn = await this.replication.currentWalLsn()
  }

  /** The last commit LSN the server has processed: `global_last_seen_lsn`. */
  get globalLsn(): bigint {
    return this.lastLsn
  }

  get shapeCount(): number {
    return this.shapes.size
  }

  active(identity: string): Shape | undefined {
    return this.shapes.get(identity)
  }

  shapeByHandle(handle: string): Shape | undefined {
    return this.byHandle.get(handle)
  }

  /** Table metadata, cached briefly; a changed table invalidates the shapes built on its old columns. */
  async tableInfo(schema: string, name: string): Promise<TableInfo> {
    const key = tableKey(schema, name)
    const cached = this.tables.get(key)
    if (cached && Date.now() - cached.at < TABLE_INFO_TTL_MS) return cached.info
    const fresh = await readTableInfo(this.pool, schema, name)
    const unchanged = cached && cached.info.fingerprint === fresh.fingerprint && cached.info.oid === fresh.oid
    const info = unchanged ? cached.info : fresh
    if (cached && !unchanged) await this.dropTableShapes(schema, name)
    this.tables.set(key, { info, at: Date.now() })
    return info
  }

  /** Resolves a request's shape; the compiled definition is reused while its table is unchanged. */
  async resolve(input: ShapeDefinition['input']): Promise<ShapeDefinition> {
    const key = JSON.stringify(input)
    const cached = this.definitions.get(key)
    if (cached) {
      const { schema, name } = cached.table
      if ((await this.tableInfo(schema, name)) === cached.table) return cached
    }
    const definition = await resolveDefinition(input, (schema, name) => this.tableInfo(schema, name))
    if (this.definitions.size >= DEFINITION_CACHE_SIZE) this.definitions.delete(this.definitions.keys().next().value as string)
    this.definitions.set(key, definition)
    return definition
  }

  /** The active shape for a definition, created (with its snapshot started) when there is none. */
  async shapeFor(definition: ShapeDefinition): Promise<Shape> {
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
    const key = tableKey(table.schema, table.name)
    if (this.publishedTables.has(key)) return
    await this.requireReplication().ensureTable(table.schema, table.name)
    this.publishedTables.add(key)
  }

  private requireReplication(): ReplicationStream {
    if (!this.replication) throw new Error('replication is not running')
    return this.replication
  }

  private newHandle(definition: ShapeDefinition): string {
    this.counter = (this.counter + 1) % 1000
    return `${identityHash(definition.identity)}-${Date.now() * 1000 + this.counter}`
  }

  private async create(definition: ShapeDefinition): Promise<Shape> {
    await this.publish(definition.table)
    const handle = this.newHandle(definition)
    const dir = join(this.shapesDir, handle)
    await mkdir(dir, { recursive: true })
    const shape = new Shape(handle, definition, dir, ShapeLog.open(dir, this.options.chunkBytes), new Date().toISOString())
    this.register(shape)
    const query = { definition, withRows: definition.log === 'full' }
    runSnapshot(this.pool, dir, this.options.chunkBytes, query, {
      onSnapshot: (info) => shape.snapshotTaken(info),
      onChunk: (chunk, last, body) => {
        shape.chunkWritten(chunk, last, body)
        if (last) this.saveMeta(shape)
      }
    }).catch((error: unknown) => {
      this.options.log(`snapshot of ${handle} failed: ${(error as Error).message}`)
      shape.fail(error as Error)
      void this.drop(shape)
    })
    return shape
  }

  private register(shape: Shape): void {
    const { definition } = shape
    this.shapes.set(definition.identity, shape)
    this.byHandle.set(shape.handle, shape)
    this.router.add(shape.handle, tableKey(definition.table.schema, definition.table.name), definition.where, shape)
  }

  private saveMeta(shape: Shape): void {
    const meta = shape.meta()
    if (meta && !shape.invalidated) writeFileSync(join(shape.dir, 'meta.json'), JSON.stringify(meta))
  }

  /** Removes a shape for good: its clients get 409 must-refetch on their next request. */
  async drop(shape: Shape): Promise<void> {
    if (this.byHandle.get(shape.handle) !== shape) return
    this.byHandle.delete(shape.handle)
    if (this.shapes.get(shape.definition.identity) === shape) this.shapes.delete(shape.definition.identity)
    this.router.remove(shape.handle)
    shape.invalidate()
    await rm(shape.dir, { recursive: true, force: true })
  }

  private async dropTableShapes(schema: string, name: string): Promise<void> {
    this.tables.delete(tableKey(schema, name))
    const doomed = [...this.shapes.values()].filter((shape) => shape.definition.table.schema === schema && shape.definition.table.name === name)
    for (const shape of doomed) await this.drop(shape)
  }

  private async restoreShapes(): Promise<void> {
    await mkdir(this.shapesDir, { recursive: true })
    for (const handle of await readdir(this.shapesDir)) {
      const dir = join(this.shapesDir, handle)
      const restored = await this.restoreShape(dir).catch((error: unknown) => {
        this.options.log(`shape ${handle} not restored: ${(error as Error).message}`)
        return null
      })
      if (restored) this.register(restored)
      else await rm(dir, { recursive: true, force: true })
    }
  }

  private async restoreShape(dir: string): Promise<Shape | null> {
    const metaPath = join(dir, 'meta.json')
    if (!existsSync(metaPath)) return null
    const meta = ShapeMetaSchema.parse(parseJson(readFileSync(metaPath, 'utf8')))
    const definition = await this.resolve(meta.input)
    if (definition.table.fingerprint !== meta.tableFingerprint || this.shapes.has(definition.identity)) return null
    this.publishedTables.add(tableKey(definition.table.schema, definition.table.name))
    return Shape.restore(meta, definition, dir, this.options.chunkBytes)
  }

  private async relationSeen(relation: RelationInfo): Promise<void> {
    const key = tableKey(relation.schema, relation.table)
    const fingerprint = columnsFingerprint(relation.columns)
    const stale = [...this.shapes.values()].some(
      (shape) => tableKey(shape.definition.table.schema, shape.definition.table.name) === key && shape.definition.table.fingerprint !== fingerprint
    )
    if (stale) await this.dropTableShapes(relation.schema, relation.table)
  }

  /**
   * Routes one committed transaction into the logs of the shapes it touches, then records it as applied. A large one
   * is routed in time slices with the event loop free in between; the replication stream hands over the next
   * transaction, and acknowledges this one, only once this promise resolves.
   */
  private async applyTransaction(tx: ReplicatedTransaction): Promise<void> {
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
      shape.receive(tx.xid, messages.map((entry) => ({ offset: { tx: tx.commitLsn, op: entry.op }, line: JSON.stringify(entry.message) })))
      await slices.yieldIfDue()
    }
    this.lastLsn = tx.commitLsn
    this.saveState(tx.commitLsn)
  }

  private saveState(appliedLsn: bigint | null): void {
    this.state = { ...this.state, appliedLsn: appliedLsn === null ? null : appliedLsn.toString() }
    writeFileSync(join(this.options.dir, 'state.json'), JSON.stringify(this.state))
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

  async stop(): Promise<void> {
    await this.replication?.stop()
    this.replication = null
    await this.applying.catch(() => undefined)
    for (const shape of this.shapes.values()) shape.invalidate()
    await this.pool.end().catch(() => undefined)
  }
}

/** Reads (or starts) the replication state of this folder; a different database cluster starts afresh. */
async function prepareState(pool: pg.Pool, dir: string): Promise<State> {
  const { rows } = await pool.query<{ system_id: string; database: string }>('SELECT system_identifier::text AS system_id, current_database() AS database FROM pg_control_system()')
  const systemId = `${rows[0]?.system_id ?? 'unknown'}/${rows[0]?.database ?? ''}`
  const path = join(dir, 'state.json')
  const saved = existsSync(path) ? StateSchema.safeParse(parseJson(readFileSync(path, 'utf8'))) : null
  if (saved?.success && saved.data.systemId === systemId) return saved.data
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  const state: State = { systemId, slotName: `syncscope_${randomBytes(5).toString('hex')}`, appliedLsn: null }
  writeFileSync(path, JSON.stringify(state))
  return state
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}
