import { readFile } from 'node:fs/promises'
import { type XidSnapshot, visibleIn, xidSnapshot } from '../../shared/xid-snapshot'
import type { Cancellation } from './cancellation'
import { z } from 'zod'
import type { ShapeDefinition } from './definition'
import { ShapeInputSchema } from './definition'
import { type LogOffset, compareOffsets } from './offset'
import { type LogEntry, type LogSlice, ShapeLog } from './shape-log'
import { type HeldChunk, type SnapshotInfo, chunkPath } from './snapshot'

/** Bumped when the files of a shape change form: shapes written in another form are dropped on start (409). */
export const SHAPE_FORMAT = 2

export const ShapeMetaSchema = z.object({
  format: z.literal(SHAPE_FORMAT),
  handle: z.string(),
  input: ShapeInputSchema,
  createdAt: z.string(),
  tableFingerprint: z.string(),
  snapshot: z.object({ xmin: z.string(), xmax: z.string(), xipList: z.array(z.string()), databaseLsn: z.string() }),
  chunks: z.number().int().positive()
})
export type ShapeMeta = z.infer<typeof ShapeMetaSchema>

/** A transaction's entries for one shape, held until the shape's snapshot tells whether they are already in it. */
interface HeldTransaction {
  xid: number
  entries: LogEntry[]
}

type Wake = () => void

/** A whole 200 answer, headers flattened, ready to be written again (see Responder.sendPrepared). */
export interface PreparedAnswer {
  headers: string[]
  body: Buffer
  /** The answer as the bytes of a complete HTTP/1.1 response, for the second whose Date it carries. */
  wire?: { date: string; bytes: Buffer }
}

const MAX_PREPARED_ANSWERS = 64
/** Unread chunks kept in memory per shape, so a client a few chunks behind the snapshot still reads none from disk. */
const RECENT_CHUNK_BYTES = 64 * 1024 * 1024
const RECENT_CHUNK_MS = 30_000

/** A read of a shape's files failed because the shape was dropped meanwhile (its clients must refetch). */
export class ShapeGoneError extends Error {
  override readonly name = 'ShapeGoneError'
}

/** One shape: its definition, snapshot chunks and main log on disk, and the requests waiting for it. */
export class Shape {
  snapshot: SnapshotInfo | null = null
  /** The snapshot's xids, for telling which replicated transactions it already holds. */
  private visibility: XidSnapshot | null = null
  /** Complete snapshot chunk files; `snapshotChunks` is set once the last one is written. */
  readyChunks = 0
  snapshotChunks: number | null = null
  failure: Error | null = null
  invalidated = false
  /** Answers built for the current log end, shared by identical requests (see serve-log); emptied as the log grows. */
  readonly preparedAnswers = new Map<string, PreparedAnswer>()
  private held: HeldTransaction[] = []
  /** Snapshot chunks just written, not read yet (see keepChunk). */
  private recentChunks: Map<number, HeldChunk> | null = null
  private readonly waiters = new Set<Wake>()

  constructor(
    readonly handle: string,
    readonly definition: ShapeDefinition,
    readonly dir: string,
    readonly log: ShapeLog,
    readonly createdAt: string
  ) {}

  static restore(meta: ShapeMeta, definition: ShapeDefinition, dir: string, chunkBytes: number): Shape {
    const shape = new Shape(meta.handle, definition, dir, ShapeLog.open(dir, chunkBytes), meta.createdAt)
    shape.snapshotTaken(meta.snapshot)
    shape.readyChunks = meta.chunks
    shape.snapshotChunks = meta.chunks
    return shape
  }

  meta(): ShapeMeta | null {
    if (!this.snapshot || this.snapshotChunks === null) return null
    return {
      format: SHAPE_FORMAT,
      handle: this.handle,
      input: this.definition.input,
      createdAt: this.createdAt,
      tableFingerprint: this.definition.table.fingerprint,
      snapshot: this.snapshot,
      chunks: this.snapshotChunks
    }
  }

  get lastOffset(): LogOffset {
    return this.log.lastOffset
  }

  /** Takes a committed transaction's entries for this shape; returns true when the log grew. */
  receive(xid: number, entries: LogEntry[]): boolean {
    if (this.invalidated || entries.length === 0) return false
    if (!this.visibility) {
      this.held.push({ xid, entries })
      return false
    }
    if (visibleIn(this.visibility, xid)) return false
    const added = this.log.append(entries) > 0
    if (added) {
      this.preparedAnswers.clear()
      this.wake()
    }
    return added
  }

  snapshotTaken(info: SnapshotInfo): void {
    this.snapshot = info
    this.visibility = xidSnapshot(info.xmin, info.xmax, info.xipList)
    const held = this.held
    this.held = []
    for (const transaction of held) this.receive(transaction.xid, transaction.entries)
  }

  chunkWritten(chunk: number, last: boolean, body: HeldChunk): void {
    this.keepChunk(chunk, body)
    this.readyChunks = chunk + 1
    if (last) this.snapshotChunks = chunk + 1
    this.wake()
  }

  prepareAnswer(key: string, answer: PreparedAnswer): void {
    if (this.preparedAnswers.size >= MAX_PREPARED_ANSWERS) this.preparedAnswers.clear()
    this.preparedAnswers.set(key, answer)
  }

  fail(error: Error): void {
    this.failure = error
    this.wake()
  }

  invalidate(): void {
    this.invalidated = true
    for (const held of this.recentChunks?.values() ?? []) held.release()
    this.recentChunks?.clear()
    this.wake()
  }

  private wake(): void {
    const waiters = [...this.waiters]
    this.waiters.clear()
    for (const wake of waiters) wake()
  }

  /**
   * Calls `then` once, synchronously, on the next change of this shape (new entries, a chunk, failure, invalidation),
   * after `ms`, or on cancel. Synchronous so that one change answers every waiting long-poll in one go.
   */
  onChange(then: () => void, ms: number, cancellation?: Cancellation): void {
    const done = () => {
      clearTimeout(timer)
      this.waiters.delete(done)
      stopListening?.()
      then()
    }
    const timer = setTimeout(done, ms)
    this.waiters.add(done)
    const stopListening = cancellation?.onCancel(done)
  }

  /** Resolves on the next change of this shape, after `ms`, or on cancel. */
  nextChange(ms: number, cancellation?: Cancellation): Promise<void> {
    return new Promise((resolve) => this.onChange(resolve, ms, cancellation))
  }

  /** Waits until `until()` holds or `ms` have passed; returns whether it holds. */
  async waitFor(until: () => boolean, ms: number, cancellation?: Cancellation): Promise<boolean> {
    const deadline = Date.now() + ms
    while (!until()) {
      const left = deadline - Date.now()
      if (left <= 0 || this.invalidated || this.failure || cancellation?.cancelled) return until()
      await this.nextChange(left, cancellation)
    }
    return true
  }

  /**
   * Keeps a chunk just written in memory for the client that follows the snapshot: taken by the first read, released
   * after RECENT_CHUNK_MS; the oldest go first beyond RECENT_CHUNK_BYTES.
   */
  private keepChunk(chunk: number, body: HeldChunk): void {
    this.recentChunks ??= new Map()
    const recent = this.recentChunks
    recent.set(chunk, body)
    const forget = (old: number) => {
      recent.get(old)?.release()
      recent.delete(old)
    }
    let held = 0
    for (const kept of recent.values()) held += kept.bytes.length
    for (const [old, kept] of recent) {
      if (held <= RECENT_CHUNK_BYTES || old === chunk) break
      held -= kept.bytes.length
      forget(old)
    }
    setTimeout(() => forget(chunk), RECENT_CHUNK_MS).unref()
  }

  /** A snapshot chunk as written (a complete JSON array of messages); release it once its bytes are written out. */
  async readChunk(chunk: number): Promise<HeldChunk> {
    const recent = this.recentChunks?.get(chunk)
    if (!recent) return { bytes: await this.whileValid(readFile(chunkPath(this.dir, chunk))), release: () => undefined }
    this.recentChunks?.delete(chunk)
    return recent
  }

  readLogAfter(offset: LogOffset): Promise<LogSlice | null> {
    return compareOffsets(offset, this.log.lastOffset) >= 0 ? Promise.resolve(null) : this.whileValid(this.log.readAfter(offset))
  }

  /** A read of this shape's files, whose failure after the shape was dropped (its files removed) is a ShapeGoneError. */
  private async whileValid<T>(reading: Promise<T>): Promise<T> {
    try {
      return await reading
    } catch (error) {
      if (this.invalidated) throw new ShapeGoneError(`shape ${this.handle} was dropped while it was read`)
      throw error
    }
  }

  /** The entries after `offset` when the log's in-memory tail holds them (null: none), undefined when it does not. */
  tailAfter(offset: LogOffset): LogSlice | null | undefined {
    return compareOffsets(offset, this.log.lastOffset) >= 0 ? null : this.log.tailAfter(offset)
  }
}
