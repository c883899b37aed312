import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readSync, writeFileSync, writeSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { type LogOffset, SNAPSHOT_END, compareOffsets } from './offset'

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

const RECORD_BYTES = 20
/** Recently appended bytes kept in memory, so live readers of a busy shape do not go to disk. */
const TAIL_BYTES = 64 * 1024

/** A growable column of numbers, so an idle shape with an empty log costs a few bytes. */
class Column<T extends BigUint64Array | Float64Array> {
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
 * (tx, op, end position). Entries are cut into chunks of about `chunkBytes`; a read never crosses a chunk end.
 */
export class ShapeLog {
  private count = 0
  private readonly txs = new Column(new BigUint64Array(0), (size) => new BigUint64Array(size))
  private readonly ops = new Column(new Float64Array(0), (size) => new Float64Array(size))
  private readonly ends = new Column(new Float64Array(0), (size) => new Float64Array(size))
  private chunkEnds: number[] = []
  private chunkStart = 0
  /** The log's bytes from `tailStart` to its end (at most TAIL_BYTES of them). */
  private tail = Buffer.alloc(0)
  private tailStart = 0

  private constructor(
    readonly logPath: string,
    private readonly indexPath: string,
    private readonly chunkBytes: number
  ) {}

  /**
   * Opens (or creates) the log in `dir`, dropping a half-written tail left by a crash. Files are opened per
   * operation, so thousands of idle shapes hold no file descriptors.
   */
  static open(dir: string, chunkBytes: number): ShapeLog {
    const log = new ShapeLog(join(dir, 'log.jsonl'), join(dir, 'log.idx'), chunkBytes)
    if (existsSync(log.indexPath)) log.load()
    else {
      writeFileSync(log.logPath, '')
      writeFileSync(log.indexPath, '')
    }
    return log
  }

  private withFiles<T>(use: (logFd: number, indexFd: number) => T): T {
    const logFd = openSync(this.logPath, 'r+')
    try {
      const indexFd = openSync(this.indexPath, 'r+')
      try {
        return use(logFd, indexFd)
      } finally {
        closeSync(indexFd)
      }
    } finally {
      closeSync(logFd)
    }
  }

  private load(): void {
    this.withFiles((logFd, indexFd) => {
      const records = Math.floor(fstatSync(indexFd).size / RECORD_BYTES)
      const buffer = Buffer.alloc(records * RECORD_BYTES)
      if (records > 0) readSync(indexFd, buffer, 0, buffer.length, 0)
      const logSize = fstatSync(logFd).size
      let valid = 0
      for (let i = 0; i < records; i++) {
        const at = i * RECORD_BYTES
        const end = Number(buffer.readBigUInt64LE(at + 12))
        if (end > logSize) break
        this.remember(buffer.readBigUInt64LE(at), buffer.readUInt32LE(at + 8), end)
        valid = i + 1
      }
      ftruncateSync(indexFd, valid * RECORD_BYTES)
      ftruncateSync(logFd, this.byteEnd(valid - 1))
    })
    this.tailStart = this.byteEnd(this.count - 1)
  }

  private byteEnd(index: number): number {
    return index < 0 ? 0 : this.ends.get(index)
  }

  private remember(tx: bigint, op: number, end: number): void {
    const index = this.count
    this.txs.set(index, tx)
    this.ops.set(index, op)
    this.ends.set(index, end)
    this.count += 1
    if (end - this.chunkStart >= this.chunkBytes) {
      this.chunkEnds.push(index)
      this.chunkStart = end
    }
  }

  get size(): number {
    return this.count
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
    const text = Buffer.from(fresh.map((entry) => `${entry.line}\n`).join(''))
    const index = Buffer.alloc(fresh.length * RECORD_BYTES)
    let end = start
    fresh.forEach((entry, i) => {
      end += Buffer.byteLength(entry.line) + 1
      index.writeBigUInt64LE(entry.offset.tx, i * RECORD_BYTES)
      index.writeUInt32LE(entry.offset.op, i * RECORD_BYTES + 8)
      index.writeBigUInt64LE(BigInt(end), i * RECORD_BYTES + 12)
    })
    this.withFiles((logFd, indexFd) => {
      writeSync(logFd, text, 0, text.length, start)
      writeSync(indexFd, index, 0, index.length, this.count * RECORD_BYTES)
    })
    end = start
    for (const entry of fresh) {
      end += Buffer.byteLength(entry.line) + 1
      this.remember(entry.offset.tx, entry.offset.op, end)
    }
    this.keepTail(text)
    return fresh.length
  }

  private keepTail(text: Buffer): void {
    const tail = Buffer.concat([this.tail, text])
    const drop = Math.max(0, tail.length - TAIL_BYTES)
    this.tail = drop > 0 ? Buffer.from(tail.subarray(drop)) : tail
    this.tailStart += drop
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
  private sliceAfter(offset: LogOffset): { last: number; start: number; length: number } | null {
    const first = this.firstAfter(offset)
    if (first >= this.count) return null
    let last = this.chunkEnds.find((end) => end >= first) ?? this.count - 1
    // never end right after op 0 of a transaction that goes on: `<lsn>_0` must mean its end (see readPosition)
    if (last + 1 < this.count && this.ops.get(last) === 0 && this.txs.get(last + 1) === this.txs.get(last)) last += 1
    const start = this.byteEnd(first - 1)
    return { last, start, length: this.byteEnd(last) - start - 1 }
  }

  /** Where the next read after `offset` lies in `log.jsonl` (its messages without the last newline), and where it ends. */
  rangeAfter(offset: LogOffset): { start: number; length: number; end: LogOffset; inMemory: boolean } | null {
    const slice = this.sliceAfter(offset)
    return slice && { start: slice.start, length: slice.length, end: this.offsetAt(slice.last), inMemory: slice.start >= this.tailStart }
  }

  /** What readAfter gives, when the in-memory tail holds it; undefined when it takes a read from disk. */
  tailAfter(offset: LogOffset): LogSlice | null | undefined {
    const slice = this.sliceAfter(offset)
    if (!slice) return null
    return slice.start >= this.tailStart ? this.fromTail(slice) : undefined
  }

  private fromTail({ last, start, length }: { last: number; start: number; length: number }): LogSlice {
    return { lines: this.tail.subarray(start - this.tailStart, start - this.tailStart + length), end: this.offsetAt(last) }
  }

  /** The entries after `offset` up to the end of the chunk the first of them is in; null when there are none. */
  async readAfter(offset: LogOffset): Promise<LogSlice | null> {
    const slice = this.sliceAfter(offset)
    if (!slice) return null
    if (slice.start >= this.tailStart) return this.fromTail(slice)
    const { last, start, length } = slice
    const lines = Buffer.alloc(length)
    const file = await open(this.logPath, 'r')
    try {
      await file.read(lines, 0, length, start)
    } finally {
      await file.close()
    }
    return { lines, end: this.offsetAt(last) }
  }
}
