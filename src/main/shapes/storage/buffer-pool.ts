/**
 * Reusable buffers of one size. Snapshot chunks are built in buffers of about 10 MiB: a fresh one per chunk costs
 * page faults on first write and, with a few of them a second, back-to-back garbage collections. A sync has about
 * seven in flight (64 MiB kept for readers, the chunk being built, the file writes behind it), so the pool keeps 12:
 * with 4, each 1,000,000-row sync faulted in ~10,000 fresh pages, at ~15 µs a fault on the project's VM.
 */
export class BufferPool {
  private readonly free: Buffer[] = []
  private idle: NodeJS.Timeout | null = null

  constructor(
    readonly size: number,
    private readonly keep = 12,
    private readonly idleMs = 30_000
  ) {}

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafe(this.size)
  }

  /** Takes a buffer back (only one of this pool's size); the free ones are dropped after `idleMs` without use. */
  give(buffer: Buffer): void {
    if (buffer.length !== this.size || this.free.length >= this.keep) return
    this.free.push(buffer)
    if (this.idle) this.idle.refresh()
    else this.idle = setTimeout(() => this.drop(), this.idleMs).unref()
  }

  private drop(): void {
    this.free.length = 0
    this.idle = null
  }
}

const pools = new Map<number, BufferPool>()

/** The pool of buffers of `size` bytes, shared by every snapshot that uses that size. */
export function bufferPool(size: number): BufferPool {
  let pool = pools.get(size)
  if (!pool) pools.set(size, (pool = new BufferPool(size)))
  return pool
}
