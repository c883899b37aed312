/** Smallest buffer a tail starts with once something is appended. */
const FIRST_CAPACITY = 4 * 1024

/**
 * The last bytes of a log kept in memory, so live readers of a busy shape do not go to disk. Appends copy into spare
 * room of one buffer; when it is full, the newest half moves to a new buffer. Bytes once written never change, so a
 * slice handed to a reader stays valid while the tail goes on (an append used to copy the whole tail: with thousands
 * of shapes that was a hundred megabytes of garbage per transaction).
 */
export class LogTail {
  private buffer = Buffer.alloc(0)
  private used = 0
  /** Log position of the first byte held. */
  private first: number

  constructor(
    private readonly maxBytes: number,
    start: number
  ) {
    this.first = start
  }

  /** Log position from which on the tail holds every byte. */
  get start(): number {
    return this.first
  }

  append(text: Buffer): void {
    if (this.used + text.length > this.buffer.length) this.makeRoom(text.length)
    const skip = Math.max(0, text.length - (this.buffer.length - this.used))
    text.copy(this.buffer, this.used, skip)
    this.used += text.length - skip
    this.first += skip
  }

  private makeRoom(incoming: number): void {
    const capacity = Math.min(this.maxBytes, Math.max(FIRST_CAPACITY, 2 ** Math.ceil(Math.log2(this.used + incoming))))
    const keep = Math.min(
      this.used,
      Math.max(0, capacity - incoming),
      capacity >= this.maxBytes ? this.maxBytes / 2 : capacity
    )
    const next = Buffer.allocUnsafe(capacity)
    this.buffer.copy(next, 0, this.used - keep, this.used)
    this.first += this.used - keep
    this.buffer = next
    this.used = keep
  }

  /** Bytes [position, position + length) of the log; the caller checked that position ≥ start. */
  slice(position: number, length: number): Buffer {
    const at = position - this.first
    return this.buffer.subarray(at, at + length)
  }
}
