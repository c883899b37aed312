import type { HeldChunk } from './chunk-files'

/** One reader's hold on shared chunk bytes; `release(clean)` once its response is done with them. */
export interface SharedChunk {
  bytes: Buffer
  /** `clean`: every byte was handed to the system; otherwise (a response cut short) the buffer is never reused. */
  release(clean: boolean): void
}

interface Entry {
  bytes: Promise<Buffer>
  size: number
  readers: number
  /** Gives a pooled buffer back once nobody holds it; skipped when a reader was cut short (its socket may still have it queued). */
  giveBack: (() => void) | null
  clean: boolean
  /** Held for readers to come (a snapshot chunk just written), until the first of them or a timeout. */
  kept: NodeJS.Timeout | null
}

/**
 * Chunk bytes shared by every response that reads them — a snapshot chunk, a range of the main log — one buffer per
 * chunk, held while any response still writes it: a hundred slow readers of a 10 MiB chunk hold 10 MiB, not 1 GiB.
 * All of one shape's stay under `limit` bytes; a read that would pass it is told so (its caller streams the file).
 */
export class SharedChunks {
  private readonly entries = new Map<string, Entry>()
  private held = 0
  /** When a reader last took chunk bytes or was done with them: while that is recent, a reader follows the snapshot. */
  private lastRead = -Infinity
  /** Keeps waiting for room, woken whenever bytes are let go. */
  private readonly roomWaiters = new Set<() => void>()
  private closed = false

  constructor(private readonly limit: number) {}

  /**
   * Holds the bytes under `key`, loading them when nobody holds them (released once the last reader is done with them);
   * null when holding `size` more would pass the limit.
   */
  async acquire(key: string, size: () => Promise<number>, load: () => Promise<HeldChunk>): Promise<SharedChunk | null> {
    let entry = this.entries.get(key)
    if (entry?.kept) {
      // the first reader takes over the keeping hold
      clearTimeout(entry.kept)
      entry.kept = null
    } else if (entry) {
      entry.readers += 1
    } else {
      const bytes = await size()
      entry = this.entries.get(key)
      if (entry) entry.readers += 1
      else {
        if (this.held + bytes > this.limit && !this.forgetKept(bytes)) return null
        const loaded: Entry = this.add(
          key,
          load().then((chunk) => {
            loaded.giveBack = () => chunk.release()
            return chunk.bytes
          }),
          bytes,
          null
        )
        entry = loaded
      }
    }
    const held = entry
    this.lastRead = performance.now()
    try {
      return this.hold(key, held, await held.bytes)
    } catch (error) {
      this.drop(key, held, false)
      throw error
    }
  }

  /**
   * Keeps bytes already in memory (a snapshot chunk just written) for the first reader to come, at most `ms`. When
   * they do not fit while a reader follows the chunks (took some or was done with some within `patienceMs`), waits for
   * it to make room, each time at most `patienceMs`, rather than let go of chunks it has yet to read; otherwise the
   * oldest kept chunks make room. Resolves once the bytes are kept or let go.
   */
  async keep(key: string, chunk: HeldChunk, ms: number, patienceMs = 0): Promise<void> {
    const size = chunk.bytes.length
    while (!this.closed && this.held + size > this.limit && performance.now() - this.lastRead < patienceMs)
      await this.roomOrTimeout(patienceMs)
    if (this.closed || this.entries.has(key) || (this.held + size > this.limit && !this.forgetKept(size)))
      return chunk.release()
    const entry = this.add(key, Promise.resolve(chunk.bytes), size, () => chunk.release())
    entry.kept = setTimeout(() => {
      entry.kept = null
      this.drop(key, entry, true)
    }, ms).unref()
  }

  /**
   * The shape is gone: lets go of every chunk kept for readers to come, and keeps none from now on (a keep waiting for
   * room lets its chunk go); held ones go when their readers finish.
   */
  close(): void {
    this.closed = true
    this.forgetKept(Infinity)
    this.wakeRoomWaiters()
  }

  private roomOrTimeout(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.roomWaiters.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.roomWaiters.add(done)
    })
  }

  private wakeRoomWaiters(): void {
    for (const wake of [...this.roomWaiters]) wake()
  }

  private add(key: string, bytes: Promise<Buffer>, size: number, giveBack: (() => void) | null): Entry {
    const entry: Entry = { bytes, size, readers: 1, giveBack, clean: true, kept: null }
    this.entries.set(key, entry)
    this.held += size
    return entry
  }

  private hold(key: string, entry: Entry, bytes: Buffer): SharedChunk {
    let released = false
    return {
      bytes,
      release: (clean) => {
        if (released) return
        released = true
        this.lastRead = performance.now()
        this.drop(key, entry, clean)
      }
    }
  }

  private drop(key: string, entry: Entry, clean: boolean): void {
    entry.clean &&= clean
    entry.readers -= 1
    if (entry.readers > 0) return
    if (this.entries.get(key) === entry) this.entries.delete(key)
    this.held -= entry.size
    if (entry.clean) entry.giveBack?.()
    this.wakeRoomWaiters()
  }

  /** Lets go of kept chunks, oldest first, until `size` more bytes fit; returns whether they do. */
  private forgetKept(size: number): boolean {
    for (const [key, entry] of this.entries) {
      if (this.held + size <= this.limit) break
      if (!entry.kept || entry.readers > 1) continue
      clearTimeout(entry.kept)
      entry.kept = null
      this.drop(key, entry, true)
    }
    return this.held + size <= this.limit
  }
}
