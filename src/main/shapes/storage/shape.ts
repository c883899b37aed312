import { createReadStream, statSync } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import { crc32 } from 'node:zlib'
import { type XidSnapshot, visibleIn, xidSnapshot } from '../../../shared/xid-snapshot'
import type { Cancellation } from '../live/cancellation'
import { AppendTimes } from '../commit-times'
import { z } from 'zod'
import type { ResolvedShape } from '../definition/definition'
import { ShapeInputSchema } from '../definition/definition'
import { type LogOffset, compareOffsets } from './offset'
import { type LogEntry, type LogSlice, ShapeDamagedError, ShapeLog } from './shape-log'
import { type SharedChunk, SharedChunks } from './shared-chunks'
import { type HeldChunk, type SnapshotInfo, chunkBufferPool, chunkPath } from '../snapshot/snapshot'
import type { BufferPool } from '../snapshot/buffer-pool'
import {
  PENDING,
  type SnapshotEvent,
  type SnapshotState,
  failureOf,
  nextSnapshotState,
  readyChunksOf,
  snapshotChunksOf,
  snapshotInfoOf
} from '../snapshot/lifecycle'

/** Bumped when the files of a shape change form: shapes written in another form are dropped on start (409). */
export const SHAPE_FORMAT = 3

/** A snapshot chunk file's length and CRC-32, checked before the file is served. */
const ChunkCheckSchema = z.object({ bytes: z.number().int().nonnegative(), crc: z.number().int().nonnegative() })
type ChunkCheck = z.infer<typeof ChunkCheckSchema>

export const ShapeMetaSchema = z.object({
  format: z.literal(SHAPE_FORMAT),
  handle: z.string(),
  input: ShapeInputSchema,
  createdAt: z.string(),
  tableFingerprint: z.string(),
  snapshot: z.object({ xmin: z.string(), xmax: z.string(), xipList: z.array(z.string()), databaseLsn: z.string() }),
  chunks: z.array(ChunkCheckSchema).min(1)
})
export type ShapeMeta = z.infer<typeof ShapeMetaSchema>

/** A transaction's entries for one shape, held until the shape's snapshot tells whether they are already in it. */
interface HeldTransaction {
  xid: number
  entries: LogEntry[]
}

type Wake = () => void

/**
 * Chunk bytes in memory per shape: those being sent to readers (shared by all of them) and snapshot chunks just
 * written, kept for the client following the snapshot so that, a few chunks behind, it still reads none from disk.
 */
const SHARED_CHUNK_BYTES = 64 * 1024 * 1024
const KEEP_WRITTEN_CHUNK_MS = 30_000
/**
 * How long the snapshot waits for a reader that follows it (took or finished a chunk this recently) to make room for
 * the next chunk, rather than let go of chunks the reader has yet to read and have it read them back from disk. A
 * reader that takes longer than this per chunk is not waited for: the snapshot never runs much slower than ~20 MB/s
 * because of its readers.
 */
const FOLLOWER_PATIENCE_MS = 500
const COMMA = 44
/** Bytes read at a time when a chunk too big to share is checked before it is streamed. */
const CHECK_READ_BYTES = 1024 * 1024

/** Bytes of a file to stream to a reader, when sharing them in memory would pass the shape's limit. */
export interface FileRange {
  path: string
  start: number
  length: number
  /** Sent before the file's bytes. */
  prefix: Buffer | null
  /** Log lines become the items of a JSON array. */
  newlinesToCommas: boolean
}

/** A chunk as a response sends it: bytes shared in memory, or a range of a file. */
export type ChunkSource = SharedChunk | FileRange

/** A read of a shape's files failed because the shape was dropped meanwhile (its clients must refetch). */
export class ShapeGoneError extends Error {
  override readonly name = 'ShapeGoneError'
}

/** One shape: its definition, snapshot chunks and main log on disk, and the requests waiting for it. */
export class Shape {
  /** Where the snapshot stands (see snapshot/lifecycle); every change of it goes through `move`. */
  private snapshotState: SnapshotState = PENDING
  /** The snapshot's xids, for telling which replicated transactions it already holds. */
  private visibility: XidSnapshot | null = null
  private held: HeldTransaction[] = []
  private readonly chunks = new SharedChunks(SHARED_CHUNK_BYTES)
  private readonly chunkChecks: ChunkCheck[] = []
  private readonly waiters = new Set<Wake>()
  /** Bytes of the snapshot chunk files written so far. */
  private snapshotBytes = 0
  /**
   * Told when a snapshot chunk adds to the shape's files (the registry's disk budget); what it throws fails the
   * snapshot (ShapeTooLargeError).
   */
  onDiskGrowth: ((shape: Shape) => void) | null = null
  /** When the log last grew (ms since the epoch): for a restored shape, log.jsonl's mtime; null while it is empty. */
  lastChangeAt: number | null = null
  /** When a request last used the shape (ms since the epoch), and the order of that use; null when restored and unused. */
  lastUsedAt: number | null = null
  useSequence = 0
  /** When its last transactions were appended (the workbench's latency, `GET /v1/debug/commit-times`). */
  readonly appendTimes = new AppendTimes()

  constructor(
    readonly handle: string,
    readonly definition: ResolvedShape,
    readonly dir: string,
    readonly log: ShapeLog,
    readonly createdAt: string
  ) {}

  /** The shape of a folder written before; throws ShapeDamagedError when its files do not hold what they promise. */
  static restore(
    meta: ShapeMeta,
    definition: ResolvedShape,
    dir: string,
    chunkBytes: number,
    durableLsn: bigint
  ): Shape {
    meta.chunks.forEach((check, chunk) => {
      const size = statSync(chunkPath(dir, chunk), { throwIfNoEntry: false })?.size
      if (size !== check.bytes)
        throw new ShapeDamagedError(
          meta.handle,
          `snapshot-${chunk}.jsonl has ${size ?? 'no'} bytes, not ${check.bytes}`
        )
    })
    const shape = new Shape(meta.handle, definition, dir, ShapeLog.restore(dir, chunkBytes, durableLsn), meta.createdAt)
    if (shape.log.size > 0) shape.lastChangeAt = statSync(shape.log.logPath).mtimeMs
    shape.chunkChecks.push(...meta.chunks)
    shape.snapshotBytes = meta.chunks.reduce((sum, check) => sum + check.bytes, 0)
    shape.move({ kind: 'restored', info: meta.snapshot, chunks: meta.chunks.length })
    shape.visibility = xidSnapshot(meta.snapshot.xmin, meta.snapshot.xmax, meta.snapshot.xipList)
    return shape
  }

  get snapshotPhase(): SnapshotState['phase'] {
    return this.snapshotState.phase
  }

  get snapshot(): SnapshotInfo | null {
    return snapshotInfoOf(this.snapshotState)
  }

  /** Complete snapshot chunk files. */
  get readyChunks(): number {
    return readyChunksOf(this.snapshotState)
  }

  /** The snapshot's number of chunks, once the last one is written. */
  get snapshotChunks(): number | null {
    return snapshotChunksOf(this.snapshotState)
  }

  get failure(): Error | null {
    return failureOf(this.snapshotState)
  }

  /** Dropped: its clients refetch (409). */
  get invalidated(): boolean {
    return this.snapshotState.phase === 'dropped'
  }

  private move(event: SnapshotEvent): void {
    this.snapshotState = nextSnapshotState(this.snapshotState, event)
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
      chunks: this.chunkChecks.slice(0, this.snapshotChunks)
    }
  }

  get lastOffset(): LogOffset {
    return this.log.lastOffset
  }

  /** Bytes the shape's snapshot and log take on disk. */
  get diskBytes(): number {
    return this.snapshotBytes + this.log.diskBytes
  }

  /** Bytes of the snapshot chunk files written so far. */
  get snapshotDiskBytes(): number {
    return this.snapshotBytes
  }

  /** Takes a committed transaction's entries for this shape; returns true when the log grew. */
  receive(xid: number, entries: LogEntry[]): boolean {
    if (this.invalidated || entries.length === 0) return false
    if (!this.visibility) {
      this.held.push({ xid, entries })
      return false
    }
    if (visibleIn(this.visibility, xid)) return false
    const appended = this.log.append(entries)
    const added = appended > 0
    if (added) {
      this.lastChangeAt = Date.now()
      this.appendTimes.appended((entries[0] as LogEntry).offset.tx, xid, appended)
      this.wake()
    }
    return added
  }

  snapshotTaken(info: SnapshotInfo): void {
    this.move({ kind: 'taken', info })
    this.visibility = xidSnapshot(info.xmin, info.xmax, info.xipList)
    const held = this.held
    this.held = []
    for (const transaction of held) this.receive(transaction.xid, transaction.entries)
    this.wake()
  }

  /** A snapshot chunk is written: kept in memory for the readers to come (see FOLLOWER_PATIENCE_MS), then announced. */
  async chunkWritten(chunk: number, last: boolean, body: HeldChunk): Promise<void> {
    this.chunkChecks[chunk] = { bytes: body.bytes.length, crc: crc32(body.bytes) }
    this.snapshotBytes += body.bytes.length
    try {
      this.onDiskGrowth?.(this)
    } catch (error) {
      body.release()
      throw error
    }
    await this.chunks.keep(snapshotKey(chunk), body, KEEP_WRITTEN_CHUNK_MS, FOLLOWER_PATIENCE_MS)
    if (this.invalidated) return
    this.move({ kind: 'chunk', chunk, last })
    this.wake()
  }

  fail(error: Error): void {
    this.move({ kind: 'failed', error })
    this.wake()
  }

  invalidate(): void {
    this.move({ kind: 'dropped' })
    this.chunks.close()
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
   * A snapshot chunk as written (a complete JSON array of messages); release it once its response is done. What is
   * read from disk is checked against the chunk's length and checksum first (ShapeDamagedError).
   */
  readChunk(chunk: number): Promise<ChunkSource> {
    return this.whileValid(this.readChunkFile(chunk))
  }

  private async readChunkFile(chunk: number): Promise<ChunkSource> {
    const path = chunkPath(this.dir, chunk)
    let length = 0
    const size = async () => (length = (await stat(path)).size)
    const shared = await this.chunks.acquire(snapshotKey(chunk), size, () => this.loadChunk(chunk, path))
    if (shared) return shared
    this.checkedChunk(chunk, null, await fileChecksum(path))
    return { path, start: 0, length, prefix: null, newlinesToCommas: false }
  }

  /** A chunk file read into a pooled buffer (a fresh one costs a page fault per 4 KiB it is read into), checked. */
  private async loadChunk(chunk: number, path: string): Promise<HeldChunk> {
    const held = await readPooled(path, chunkBufferPool(this.log.chunkBytes))
    try {
      this.checkedChunk(chunk, held.bytes)
      return held
    } catch (error) {
      held.release()
      throw error
    }
  }

  private checkedChunk(chunk: number, bytes: Buffer, found?: { bytes: number; crc: number }): Buffer
  private checkedChunk(chunk: number, bytes: null, found: { bytes: number; crc: number }): null
  private checkedChunk(
    chunk: number,
    bytes: Buffer | null,
    found = bytes && { bytes: bytes.length, crc: crc32(bytes) }
  ): Buffer | null {
    const check = this.chunkChecks[chunk]
    if (check && found && found.bytes === check.bytes && found.crc === check.crc) return bytes
    throw new ShapeDamagedError(this.handle, `snapshot-${chunk}.jsonl does not match its length and checksum`)
  }

  /**
   * A catch-up read of the main log from disk, as the start of its JSON array body (`[` and the messages, commas
   * between, no `]`), shared by every reader of that range; null when nothing follows `offset` or the log's in-memory
   * tail holds it (readLogAfter serves that).
   */
  readLogBody(offset: LogOffset): Promise<{ end: LogOffset; source: ChunkSource } | null> {
    return this.whileValid(this.readLogRange(offset))
  }

  private async readLogRange(offset: LogOffset): Promise<{ end: LogOffset; source: ChunkSource } | null> {
    const range = compareOffsets(offset, this.log.lastOffset) >= 0 ? null : this.log.rangeAfter(offset)
    if (!range || range.inMemory) return null
    const { logPath } = this.log
    const { start, length, end } = range
    // checked as it was taken: the log may grow while it is read
    const load = async (): Promise<HeldChunk> => ({
      bytes: await readArrayStart(logPath, start, length, (lines) => this.log.checkRange(range, lines)),
      release: () => undefined
    })
    const shared = await this.chunks.acquire(`log:${start}:${length}`, () => Promise.resolve(length + 1), load)
    if (shared) return { end, source: shared }
    await this.log.checkRangeOnDisk(range)
    return { end, source: { path: logPath, start, length, prefix: OPEN_ARRAY, newlinesToCommas: true } }
  }

  readLogAfter(offset: LogOffset): Promise<LogSlice | null> {
    return compareOffsets(offset, this.log.lastOffset) >= 0
      ? Promise.resolve(null)
      : this.whileValid(this.log.readAfter(offset))
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

const snapshotKey = (chunk: number): string => `snapshot:${chunk}`
const OPEN_ARRAY = Buffer.from('[')

/** A whole file read into a buffer of `pool` (or a fresh one, when it is larger); release() gives the buffer back. */
async function readPooled(path: string, pool: BufferPool): Promise<HeldChunk> {
  const file = await open(path, 'r')
  try {
    const { size } = await file.stat()
    const buffer = size <= pool.size ? pool.take() : Buffer.allocUnsafe(size)
    let released = false
    const release = (): void => {
      if (!released) pool.give(buffer)
      released = true
    }
    try {
      let read = 0
      while (read < size) {
        const { bytesRead } = await file.read(buffer, read, size - read, read)
        if (bytesRead === 0) break
        read += bytesRead
      }
      return { bytes: buffer.subarray(0, read), release }
    } catch (error) {
      release()
      throw error
    }
  } finally {
    await file.close()
  }
}

/** CRC-32 and length of a whole file, read a block at a time. */
async function fileChecksum(path: string): Promise<{ bytes: number; crc: number }> {
  let crc = 0
  let bytes = 0
  for await (const block of createReadStream(path, { highWaterMark: CHECK_READ_BYTES }) as AsyncIterable<Buffer>) {
    crc = crc32(block, crc)
    bytes += block.length
  }
  return { bytes, crc }
}

/**
 * `[` and the log's bytes [start, start + length) with every newline turned into a comma; `check` sees the lines as
 * read (newlines kept) before they are changed.
 */
async function readArrayStart(
  path: string,
  start: number,
  length: number,
  check: (lines: Buffer) => void
): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(length + 1)
  bytes[0] = OPEN_ARRAY[0] as number
  const file = await open(path, 'r')
  try {
    const { bytesRead } = await file.read(bytes, 1, length, start)
    check(bytes.subarray(1, 1 + bytesRead))
  } finally {
    await file.close()
  }
  for (let at = bytes.indexOf(10, 1); at !== -1; at = bytes.indexOf(10, at + 1)) bytes[at] = COMMA
  return bytes
}
