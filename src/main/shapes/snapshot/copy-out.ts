import type { Duplex } from 'node:stream'
import type { Connection, Submittable } from 'pg'
import { BufferPool } from '../storage/buffer-pool'
import { lendReads } from './reused-read-socket'

const COPY_DATA = 0x64
const COPY_DONE = 0x63
const ERROR_RESPONSE = 0x45
const HEADER_BYTES = 5
/** Bytes of lines received and not yet taken, above which the socket is paused. */
const QUEUE_LIMIT = 4 * 1024 * 1024
/** What each of the two batch buffers starts at: a read's worth; they grow when the consumer falls behind. */
const FIRST_BATCH_BYTES = 64 * 1024
/**
 * A batch buffer that outgrows its first size takes one that holds a full queue and a read from this pool, shared by
 * every copy: fresh ones cost a large snapshot ~16 MiB of new memory (a page fault per 4 KiB, and full collections,
 * as V8 counts it against its heap). A buffer only goes back once its copy can no longer write to it.
 */
const fullBatches = new BufferPool(QUEUE_LIMIT + FIRST_BATCH_BYTES, 4)

type DataListener = (chunk: Buffer) => void

/**
 * `COPY … TO STDOUT` on a pg client, read straight off the connection's socket: the CopyData payloads of each read
 * (one row each) are copied into a batch buffer and moved together there, so a batch of complete lines costs no
 * allocation and no object per row, and nothing of a read is kept (a reusedReadSocket lends its one read buffer while
 * the copy runs). While the copy runs the connection's own message parser is set aside; at CopyDone or an
 * ErrorResponse it gets the rest of the bytes back, and pg reports completion or the error through this query as usual.
 */
export class CopyOut implements Submittable {
  private stream: Duplex | null = null
  private pgListener: DataListener | null = null
  /** Complete lines not yet taken; `spare` holds the batch the consumer works on meanwhile. */
  private pending: Buffer = Buffer.allocUnsafe(FIRST_BATCH_BYTES)
  private spare: Buffer = Buffer.allocUnsafe(FIRST_BATCH_BYTES)
  private pendingLength = 0
  /** The start of a message cut by the end of a read (copies). */
  private partial: Buffer[] = []
  private partialBytes = 0
  private copying = false
  /** Set once the consumer is gone: the rest of the copy is read and dropped. */
  private discarding = false
  private finished = false
  private failure: Error | null = null
  private wake: (() => void) | null = null
  /** Set once the consumer stopped asking for batches: the buffers go back to their pool once the copy ended too. */
  private consumerDone = false

  constructor(private readonly sql: string) {}

  submit(connection: Connection): void {
    const stream = connection.stream
    const [listener] = stream.listeners('data') as DataListener[]
    if (!listener) throw new Error('the pg connection has no data listener to set aside')
    stream.removeListener('data', listener)
    stream.on('data', this.onData)
    lendReads(stream, true)
    this.stream = stream
    this.pgListener = listener
    this.copying = true
    connection.query(this.sql)
  }

  /**
   * Batches of complete COPY text lines, in order, until the copy ends; throws what the copy failed with. A batch is
   * valid until the next is asked for. A consumer that stops early leaves the rest of the copy to be read and dropped,
   * so the connection comes back usable.
   */
  async *batches(): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        if (this.pendingLength > 0) {
          const batch = this.pending.subarray(0, this.pendingLength)
          ;[this.pending, this.spare] = [this.spare, this.pending]
          this.pendingLength = 0
          this.stream?.resume()
          yield batch
          continue
        }
        if (this.failure) throw this.failure
        if (this.finished) return
        await new Promise<void>((resolve) => (this.wake = resolve))
      }
    } finally {
      this.discarding = true
      this.pendingLength = 0
      this.consumerDone = true
      if (this.copying) this.stream?.resume()
      this.giveBuffersBack()
    }
  }

  private readonly onData = (chunk: Buffer): void => {
    let at = 0
    if (this.partialBytes > 0) {
      at = this.completePartial(chunk)
      if (at === -1) return
      if (!this.copying) {
        if (at < chunk.length) this.pgListener?.(Buffer.from(chunk.subarray(at)))
        return
      }
    }
    this.readMessages(chunk, at)
  }

  /**
   * Copies what `chunk` holds from `start` after the pending lines and moves the payloads of its complete CopyData
   * messages together there; keeps a copy of the message the read cut.
   */
  private readMessages(chunk: Buffer, start: number): void {
    const base = this.pendingLength
    const limit = base + chunk.length - start
    this.makeRoom(limit)
    this.pending.set(start === 0 ? chunk : chunk.subarray(start), base)
    const lines = this.pending
    let at = base
    let write = base
    while (at + HEADER_BYTES <= limit) {
      const end = at + 1 + lines.readUInt32BE(at + 1)
      if (end > limit) break
      const code = lines[at]
      if (code === COPY_DATA) {
        lines.copyWithin(write, at + HEADER_BYTES, end)
        write += end - at - HEADER_BYTES
      } else if (code === COPY_DONE || code === ERROR_RESPONSE) {
        this.linesAdded(write)
        return this.handBack(chunk.subarray(start + (code === COPY_DONE ? end : at) - base))
      }
      at = end
    }
    this.linesAdded(write)
    if (at < limit) this.keepPartial(chunk.subarray(start + at - base))
  }

  private makeRoom(size: number): void {
    const { pending } = this
    if (size <= pending.length) return
    const bigger =
      size <= fullBatches.size && pending.length < fullBatches.size
        ? fullBatches.take()
        : Buffer.allocUnsafe(Math.max(size, 2 * pending.length))
    pending.copy(bigger, 0, 0, this.pendingLength)
    this.pending = bigger
    fullBatches.give(pending)
  }

  /** Once neither the consumer nor the copy can touch them any more: the pool's buffers go back to it. */
  private giveBuffersBack(): void {
    if (!this.consumerDone || this.copying) return
    fullBatches.give(this.pending)
    fullBatches.give(this.spare)
    this.pending = this.spare = Buffer.alloc(0)
  }

  private keepPartial(part: Buffer): void {
    this.partial.push(Buffer.from(part))
    this.partialBytes += part.length
  }

  /**
   * Completes the message cut by the last read with the start of `chunk` (copying only that message) and handles it;
   * returns where the rest of `chunk` starts, or -1 when the message is still incomplete. The first part kept always
   * holds the whole 5-byte header once there are that many bytes.
   */
  private completePartial(chunk: Buffer): number {
    let used = 0
    if (this.partialBytes < HEADER_BYTES) {
      used = Math.min(HEADER_BYTES - this.partialBytes, chunk.length)
      this.partial = [Buffer.concat([...this.partial, chunk.subarray(0, used)])]
      this.partialBytes += used
      if (this.partialBytes < HEADER_BYTES) return -1
    }
    const head = this.partial[0] as Buffer
    const need = 1 + head.readUInt32BE(1) - this.partialBytes
    if (need > chunk.length - used) {
      this.keepPartial(chunk.subarray(used))
      return -1
    }
    const message = Buffer.concat([...this.partial, chunk.subarray(used, used + need)])
    this.partial = []
    this.partialBytes = 0
    this.readMessages(message, 0)
    return used + need
  }

  private linesAdded(end: number): void {
    if (this.discarding) return
    this.pendingLength = end
    if (end >= QUEUE_LIMIT) this.stream?.pause()
    if (end > 0) this.notify()
  }

  /** Gives the connection back to pg's parser, with the bytes after the copy (CommandComplete, an error, …). */
  private handBack(rest: Buffer): void {
    const { stream, pgListener } = this
    if (!stream || !pgListener) return
    this.copying = false
    lendReads(stream, false)
    stream.removeListener('data', this.onData)
    stream.on('data', pgListener)
    stream.resume()
    if (rest.length > 0) pgListener(Buffer.from(rest))
    this.giveBuffersBack()
  }

  private notify(): void {
    const wake = this.wake
    this.wake = null
    wake?.()
  }

  handleReadyForQuery(): void {
    this.finished = true
    this.notify()
  }

  handleError(error: Error): void {
    if (this.copying) this.handBack(Buffer.alloc(0))
    this.failure = error
    this.notify()
  }

  handleCommandComplete(): void {}
}
