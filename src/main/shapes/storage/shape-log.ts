import { existsSync, fstatSync, ftruncateSync, readSync, writeFileSync, writeSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { crc32 } from 'node:zlib'
import { syncPath } from '../../fs/atomic-write'
import { type LogDescriptors, logDescriptors } from './log-descriptors'
import { CHECKED_BYTES, RECORD_BYTES, VERIFY_BLOCK_BYTES, entryChecksum } from './log-format'
import { LogTail } from './log-tail'
import { type LogOffset, SNAPSHOT_END, compareOffsets } from './offset'

/** A shape's files do not hold what they promise (cut, overwritten, garbage): the shape must not be served. */
export class ShapeDamagedError extends Error {
  override readonly name = 'ShapeDamagedError'

  constructor(
    readonly handle: string,
    reason: string
  ) {
    super(`shape ${handle} is damaged: ${reason}`)
  }
}

/** One entry to append: its offset in the log and its message as one line of JSON. */
export interface LogEntry {
  offset: LogOffset
  line: string
}

/** Newline-separated JSON messages and the offset of the last one. */
export interface LogSlice {
  lines: Buffer
  end: LogOffset
}

/** Entries [first, last] of a read, their bytes [start, start + length) in log.jsonl, and the offset it ends at. */
export interface LogRange {
  first: number
  last: number
  start: number
  length: number
  end: LogOffset
  /** The log's in-memory tail holds it. */
  inMemory: boolean
}

const NEWLINE = Buffer.from('\n')
/** Recently appended bytes kept in memory, so live readers of a busy shape do not go to disk. */
const TAIL_BYTES = 64 * 1024

/** A growable column of numbers, so an idle shape with an empty log costs a few bytes. */
class Column<T extends BigUint64Array | Float64Array | Uint32Array> {
  constructor(
    private data: T,
    private readonly make: (size: number) => T
  ) {}

  get(index: number): T[number] {
    return this.data[index] as T[number]
  }

  set(index: number, value: T[number]): void {
    if (index >= this.data.length) {
      const bigger = this.make(Math.max(16, this.data.length * 2))
      bigger.set(this.data as never)
      this.data = bigger
    }
    this.data[index] = value
  }
}

/**
 * The main log of one shape on disk: `log.jsonl` holds the messages, `log.idx` one fixed-size record per entry
 * (tx, op, end position, checksum). Entries are cut into chunks of about `chunkBytes`; a read never crosses a chunk
 * end. Every read from disk is checked against the checksums, so damaged bytes are never served.
 */
export class ShapeLog {
  private count = 0
  private readonly txs = new Column(new BigUint64Array(0), (size) => new BigUint64Array(size))
  private readonly ops = new Column(new Float64Array(0), (size) => new Float64Array(size))
  private readonly ends = new Column(new Float64Array(0), (size) => new Float64Array(size))
  private readonly checksums = new Column(new Uint32Array(0), (size) => new Uint32Array(size))
  private chunkEnds: number[] = []
  private chunkStart = 0
  private tail = new LogTail(TAIL_BYTES, 0)
  /** Appended since the last sync(). */
  private unsynced = false

  private constructor(
    readonly logPath: string,
    private readonly indexPath: string,
    readonly chunkBytes: number,
    private readonly descriptors: LogDescriptors
  ) {}

  /** Creates an empty log in `dir`. Its descriptors are kept while it is busy (see LogDescriptors), not while idle. */
  static create(dir: string, chunkBytes: number, descriptors = logDescriptors): ShapeLog {
    const log = new ShapeLog(join(dir, 'log.jsonl'), join(dir, 'log.idx'), chunkBytes, descriptors)
    writeFileSync(log.logPath, '')
    writeFileSync(log.indexPath, '')
    return log
  }

  /**
   * Opens the log in `dir` and checks every entry against its checksum. Entries of transactions after `durableLsn`
   * may be missing or half-written (a crash before they were made durable; they are replayed): that tail is dropped.
   * Anything wrong with what was durable throws ShapeDamagedError.
   */
  static restore(dir: string, chunkBytes: number, durableLsn: bigint, descriptors = logDescriptors): ShapeLog {
    const log = new ShapeLog(join(dir, 'log.jsonl'), join(dir, 'log.idx'), chunkBytes, descriptors)
    if (!existsSync(log.indexPath) || !existsSync(log.logPath)) throw log.damaged('log.jsonl or log.idx is missing')
    log.load(durableLsn)
    return log
  }

  private damaged(reason: string): ShapeDamagedError {
    return new ShapeDamagedError(basename(join(this.logPath, '..')), reason)
  }

  private withFiles<T>(use: (logFd: number, indexFd: number) => T): T {
    const logFd = this.descriptors.get(this.logPath)
    return use(logFd, this.descriptors.get(this.indexPath))
  }

  /** Closes the files' descriptors; called when the shape is dropped or the server stops. */
  close(): void {
    this.descriptors.forget(this.logPath, this.indexPath)
  }

  private load(durableLsn: bigint): void {
    this.withFiles((logFd, indexFd) => {
      const records = Math.floor(fstatSync(indexFd).size / RECORD_BYTES)
      const index = Buffer.alloc(records * RECORD_BYTES)
      if (records > 0) readSync(indexFd, index, 0, index.length, 0)
      const logSize = fstatSync(logFd).size
      const lines = new BlockReader(logFd)
      let valid = 0
      for (; valid < records; valid++) {
        const at = valid * RECORD_BYTES
        const offset = { tx: index.readBigUInt64LE(at), op: index.readUInt32LE(at + 8) }
        const start = this.byteEnd(valid - 1)
        const end = Number(index.readBigUInt64LE(at + 12))
        const plausible = offset.tx > 0n && compareOffsets(offset, this.lastOffset) > 0 && end > start && end <= logSize
        const line = plausible ? lines.read(start, end) : null
        const checksum = index.readUInt32LE(at + CHECKED_BYTES)
        if (!line || entryChecksum(index.subarray(at, at + CHECKED_BYTES), line) !== checksum) {
          if (offset.tx > 0n && offset.tx <= durableLsn && compareOffsets(offset, this.lastOffset) > 0) {
            throw this.damaged(`entry ${valid} of log.idx (${offset.tx}_${offset.op}) does not match log.jsonl`)
          }
          break
        }
        this.remember(offset.tx, offset.op, end, checksum)
      }
      const end = this.byteEnd(valid - 1)
      // Lines beyond what the index holds are a torn append, unless one of them was made durable.
      const next = lines.lineAt(end, logSize)
      const nextLsn = next === null ? null : lsnOfLine(next)
      if (nextLsn !== null && nextLsn <= durableLsn)
        throw this.damaged(`log.jsonl holds entries (lsn ${nextLsn}) that log.idx lost`)
      ftruncateSync(indexFd, valid * RECORD_BYTES)
      ftruncateSync(logFd, end)
    })
    this.tail = new LogTail(TAIL_BYTES, this.byteEnd(this.count - 1))
  }

  private byteEnd(index: number): number {
    return index < 0 ? 0 : this.ends.get(index)
  }

  private remember(tx: bigint, op: number, end: number, checksum: number): void {
    const index = this.count
    this.txs.set(index, tx)
    this.ops.set(index, op)
    this.ends.set(index, end)
    this.checksums.set(index, checksum)
    this.count += 1
    if (end - this.chunkStart >= this.chunkBytes) {
      this.chunkEnds.push(index)
      this.chunkStart = end
    }
  }

  get size(): number {
    return this.count
  }

  /** Bytes of log.jsonl and log.idx. */
  get diskBytes(): number {
    return this.byteEnd(this.count - 1) + this.count * RECORD_BYTES
  }

  get lastOffset(): LogOffset {
    return this.count === 0 ? SNAPSHOT_END : this.offsetAt(this.count - 1)
  }

  private offsetAt(index: number): LogOffset {
    return { tx: this.txs.get(index), op: this.ops.get(index) }
  }

  /** Appends entries in offset order; entries at or before the last offset are skipped (a redelivered transaction). */
  append(entries: readonly LogEntry[]): number {
    const fresh = entries.filter((entry) => compareOffsets(entry.offset, this.lastOffset) > 0)
    if (fresh.length === 0) return 0
    const start = this.byteEnd(this.count - 1)
    const lines = fresh.map((entry) => Buffer.from(`${entry.line}\n`))
    const text = Buffer.concat(lines)
    const index = Buffer.alloc(fresh.length * RECORD_BYTES)
    const checksums: number[] = []
    let end = start
    fresh.forEach((entry, i) => {
      const line = lines[i] as Buffer
      const at = i * RECORD_BYTES
      end += line.length
      index.writeBigUInt64LE(entry.offset.tx, at)
      index.writeUInt32LE(entry.offset.op, at + 8)
      index.writeBigUInt64LE(BigInt(end), at + 12)
      const checksum = entryChecksum(index.subarray(at, at + CHECKED_BYTES), line)
      index.writeUInt32LE(checksum, at + CHECKED_BYTES)
      checksums.push(checksum)
    })
    this.withFiles((logFd, indexFd) => {
      writeFully(logFd, text, start)
      writeFully(indexFd, index, this.count * RECORD_BYTES)
    })
    this.unsynced = true
    end = start
    fresh.forEach((entry, i) => {
      end += (lines[i] as Buffer).length
      this.remember(entry.offset.tx, entry.offset.op, end, checksums[i] as number)
    })
    this.tail.append(text)
    return fresh.length
  }

  /** Makes what was appended durable (fdatasync of both files); a log whose folder is gone has nothing to keep. */
  async sync(): Promise<void> {
    if (!this.unsynced) return
    this.unsynced = false
    try {
      await syncPath(this.logPath)
      await syncPath(this.indexPath)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      this.unsynced = true
      throw error
    }
  }

  /** Index of the first entry after `offset`. */
  private firstAfter(offset: LogOffset): number {
    let low = 0
    let high = this.count
    while (low < high) {
      const mid = (low + high) >>> 1
      if (compareOffsets(this.offsetAt(mid), offset) <= 0) low = mid + 1
      else high = mid
    }
    return low
  }

  /** Entries [first, last] of the next read after `offset`, and their bytes in the log; null when there are none. */
  private sliceAfter(offset: LogOffset): { first: number; last: number; start: number; length: number } | null {
    const first = this.firstAfter(offset)
    if (first >= this.count) return null
    let last = this.chunkEnds.find((end) => end >= first) ?? this.count - 1
    // never end right after op 0 of a transaction that goes on: `<lsn>_0` must mean its end (see readPosition)
    if (last + 1 < this.count && this.ops.get(last) === 0 && this.txs.get(last + 1) === this.txs.get(last)) last += 1
    const start = this.byteEnd(first - 1)
    return { first, last, start, length: this.byteEnd(last) - start - 1 }
  }

  /**
   * The next read after `offset`: its entries, where their bytes lie in `log.jsonl` (its messages without the last
   * newline), and where it ends. It stays what it was when taken while the log grows (entries are only ever added).
   */
  rangeAfter(offset: LogOffset): LogRange | null {
    const slice = this.sliceAfter(offset)
    return slice && { ...slice, end: this.offsetAt(slice.last), inMemory: slice.start >= this.tail.start }
  }

  /** What readAfter gives, when the in-memory tail holds it; undefined when it takes a read from disk. */
  tailAfter(offset: LogOffset): LogSlice | null | undefined {
    const slice = this.sliceAfter(offset)
    if (!slice) return null
    return slice.start >= this.tail.start ? this.fromTail(slice) : undefined
  }

  private fromTail({ last, start, length }: { last: number; start: number; length: number }): LogSlice {
    return { lines: this.tail.slice(start, length), end: this.offsetAt(last) }
  }

  /** The entries after `offset` up to the end of the chunk the first of them is in; null when there are none. */
  async readAfter(offset: LogOffset): Promise<LogSlice | null> {
    const slice = this.sliceAfter(offset)
    if (!slice) return null
    if (slice.start >= this.tail.start) return this.fromTail(slice)
    const { last, start, length } = slice
    const lines = Buffer.alloc(length + 1)
    const file = await open(this.logPath, 'r')
    try {
      const { bytesRead } = await file.read(lines, 0, length + 1, start)
      if (bytesRead < length + 1)
        throw this.damaged(`log.jsonl ends at ${start + bytesRead}, before ${start + length + 1}`)
    } finally {
      await file.close()
    }
    this.check(this.firstAfter(offset), last, lines, start)
    return { lines: lines.subarray(0, length), end: this.offsetAt(last) }
  }

  /**
   * Checks the bytes of a range (see rangeAfter: its messages without the last newline), as read from log.jsonl,
   * against the entries' checksums; throws ShapeDamagedError.
   */
  checkRange(range: LogRange, lines: Buffer): void {
    if (lines.length !== range.length)
      throw this.damaged(`log.jsonl ends at ${range.start + lines.length}, before ${range.start + range.length}`)
    this.check(range.first, range.last, lines, range.start)
  }

  /** checkRange for a read too big to hold: the range is read from disk a bounded piece at a time. */
  async checkRangeOnDisk(range: LogRange): Promise<void> {
    const file = await open(this.logPath, 'r')
    try {
      for (let first = range.first; first <= range.last;) {
        let last = first
        while (last < range.last && this.byteEnd(last + 1) - this.byteEnd(first - 1) <= VERIFY_BLOCK_BYTES) last += 1
        const start = this.byteEnd(first - 1)
        const lines = Buffer.alloc(this.byteEnd(last) - start)
        const { bytesRead } = await file.read(lines, 0, lines.length, start)
        if (bytesRead < lines.length)
          throw this.damaged(`log.jsonl ends at ${start + bytesRead}, before ${start + lines.length}`)
        this.check(first, last, lines, start)
        first = last + 1
      }
    } finally {
      await file.close()
    }
  }

  /**
   * Checks entries [first, last], whose lines are `lines` (read from log position `start`), against their checksums.
   * The last entry's newline may be left out of `lines` (a range read for a JSON array body).
   */
  private check(first: number, last: number, lines: Buffer, start: number): void {
    const head = Buffer.alloc(CHECKED_BYTES)
    for (let index = first; index <= last; index++) {
      head.writeBigUInt64LE(this.txs.get(index), 0)
      head.writeUInt32LE(this.ops.get(index), 8)
      head.writeBigUInt64LE(BigInt(this.byteEnd(index)), 12)
      const lineEnd = this.byteEnd(index) - start
      const line = lines.subarray(this.byteEnd(index - 1) - start, lineEnd)
      const checksum = lineEnd > lines.length ? crc32(NEWLINE, entryChecksum(head, line)) : entryChecksum(head, line)
      if (checksum !== this.checksums.get(index))
        throw this.damaged(`entry ${index} of log.jsonl does not match its checksum`)
    }
  }
}

function writeFully(fd: number, data: Buffer, position: number): void {
  for (let written = 0; written < data.length;)
    written += writeSync(fd, data, written, data.length - written, position + written)
}

/** The `lsn` header of a log line, or null when the line is not a whole message. */
function lsnOfLine(line: Buffer): bigint | null {
  try {
    const lsn = (JSON.parse(line.toString('utf8')) as { headers?: { lsn?: unknown } }).headers?.lsn
    return typeof lsn === 'string' && /^\d+$/.test(lsn) ? BigInt(lsn) : null
  } catch {
    return null
  }
}

/** Reads a file forward in blocks, for checking a whole log without a read per entry. */
class BlockReader {
  private block = Buffer.alloc(0)
  private blockStart = 0

  constructor(private readonly fd: number) {}

  /** Bytes [start, end) of the file; null when the file ends before `end`. */
  read(start: number, end: number): Buffer | null {
    if (start < this.blockStart || end > this.blockStart + this.block.length) {
      const buffer = Buffer.alloc(Math.max(VERIFY_BLOCK_BYTES, end - start))
      const length = readSync(this.fd, buffer, 0, buffer.length, start)
      this.block = buffer.subarray(0, length)
      this.blockStart = start
      if (end > start + length) return null
    }
    return this.block.subarray(start - this.blockStart, end - this.blockStart)
  }

  /** The line starting at `start` (newline included) in a file of `size` bytes; null when there is no whole line. */
  lineAt(start: number, size: number): Buffer | null {
    if (start >= size) return null
    const rest = this.read(start, Math.min(size, start + VERIFY_BLOCK_BYTES))
    const newline = rest?.indexOf(10) ?? -1
    return rest && newline >= 0 ? rest.subarray(0, newline + 1) : null
  }
}
