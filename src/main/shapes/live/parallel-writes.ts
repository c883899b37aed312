import { writeSync } from 'node:fs'
import { compileFunction } from 'node:vm'
import type { Socket } from 'node:net'
import { Worker } from 'node:worker_threads'

/** Most sockets one call shares with the second thread, and the largest buffer it takes. */
const MAX_SOCKETS = 65_536
const MAX_BYTES = 256 * 1024
/** A second thread that has not finished what it took by then is taken for dead, and no longer used. */
const WORKER_DEADLINE_MS = 10_000

/**
 * How both threads take sockets to write, run by each of them (so it is source text: the worker evaluates it, the
 * event loop compiles it). One 64-bit word says which job is on, how many sockets it has and the first one nobody took
 * yet: `job << 40 | count << 20 | next`. A thread takes up to 32 sockets at a time by compare-and-swap of that word, so
 * a thread that is still looking at an earlier job can never take sockets of a later one, and the two threads end
 * their share of a job together however fast each one writes. Each write's result goes to `written`; `done` counts the
 * sockets written, and whoever writes the job's last ones wakes the event loop waiting for them.
 */
const WRITE_CLAIMED_SOURCE = `
  for (;;) {
    const word = Atomics.load(claim, 0)
    if (word >> 40n !== job) return
    const count = Number((word >> 20n) & 0xfffffn)
    const first = Number(word & 0xfffffn)
    if (first >= count) return
    const taken = Math.min(32, count - first)
    if (Atomics.compareExchange(claim, 0, word, word + BigInt(taken)) !== word) continue
    for (let i = first; i < first + taken; i++) written[i] = writeOnce(fds[i])
    if (Atomics.add(done, 0, taken) + taken === count) Atomics.notify(done, 0)
  }
`
const WRITE_CLAIMED_PARAMS = ['claim', 'done', 'fds', 'written', 'job', 'writeOnce']
type WriteClaimed = (
  claim: BigUint64Array,
  done: Int32Array,
  fds: Int32Array,
  written: Int32Array,
  job: bigint,
  writeOnce: (fd: number) => number
) => void

// control: [0] number of the job published, [1] sockets the second thread wrote in all, [2] bytes of the buffer
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads')
const { writeSync } = require('node:fs')
const writeClaimed = function (${WRITE_CLAIMED_PARAMS.join(', ')}) {${WRITE_CLAIMED_SOURCE}}
const { claim, done, control, fds, written } = workerData
const bytes = Buffer.from(workerData.bytes)
const writeOnce = (fd) => {
  Atomics.add(control, 1, 1)
  try {
    return writeSync(fd, bytes, 0, Atomics.load(control, 2))
  } catch {
    return 0
  }
}
for (let job = 0; ; ) {
  Atomics.wait(control, 0, job)
  job = Atomics.load(control, 0)
  writeClaimed(claim, done, fds, written, BigInt(job), writeOnce)
}
`

/** One write(2) of `bytes` to `fd`: how many bytes the kernel took (0 when it took none or refused: EAGAIN, EPIPE). */
function writeOnce(fd: number, bytes: Buffer): number {
  try {
    return writeSync(fd, bytes, 0, bytes.length)
  } catch {
    return 0
  }
}

const shared = (bytes: number) => new SharedArrayBuffer(bytes)

/**
 * Writes one buffer to many sockets, with a second thread. Most of the cost of a small socket write is the kernel's (on
 * loopback it runs the receiver's side of TCP too: 9–16 µs on this project's 2-core machine), so one change sent to
 * 10,000 SSE streams took ~170 ms on one thread.
 *
 * The two threads take the sockets in small claims as they go, so they end together however the machine shares its
 * cores between them; a second thread that is not running yet (it starts with the first call, or `start`) takes none,
 * and the event loop writes them all rather than wait for it.
 *
 * The caller hands over the raw descriptors of sockets with no bytes queued in Node, and this call returns only once
 * all are written: meanwhile the event loop runs nothing, so no other write can interleave and no descriptor can be
 * closed and given to another connection while the second thread writes to it. Each write is a single write(2) of a
 * non-blocking socket; what the kernel did not take (a full buffer, a closed peer) is left to the caller, which writes
 * the rest through the socket as usual, where errors are handled.
 */
export class ParallelSocketWrites {
  private worker: Worker | null = null
  private readonly claim = new BigUint64Array(shared(BigUint64Array.BYTES_PER_ELEMENT))
  private readonly done = new Int32Array(shared(Int32Array.BYTES_PER_ELEMENT))
  private readonly control = new Int32Array(shared(3 * Int32Array.BYTES_PER_ELEMENT))
  private readonly fds = new Int32Array(shared(MAX_SOCKETS * Int32Array.BYTES_PER_ELEMENT))
  private readonly written = new Int32Array(shared(MAX_SOCKETS * Int32Array.BYTES_PER_ELEMENT))
  private readonly bytes = Buffer.from(shared(MAX_BYTES))
  private readonly writeClaimed = compileFunction(WRITE_CLAIMED_SOURCE, WRITE_CLAIMED_PARAMS) as WriteClaimed
  private job = 0
  private broken = false

  /** Bytes the kernel took for each descriptor, in order. */
  write(fds: readonly number[], bytes: Buffer): number[] {
    if (this.broken || bytes.length > MAX_BYTES || fds.length > MAX_SOCKETS || !this.start())
      return fds.map((fd) => writeOnce(fd, bytes))
    this.fds.set(fds)
    bytes.copy(this.bytes)
    this.written.fill(0, 0, fds.length)
    Atomics.store(this.done, 0, 0)
    Atomics.store(this.control, 2, bytes.length)
    this.job = (this.job + 1) % 2 ** 23
    const job = BigInt(this.job)
    Atomics.store(this.claim, 0, (job << 40n) | (BigInt(fds.length) << 20n))
    Atomics.store(this.control, 0, this.job)
    Atomics.notify(this.control, 0)
    this.writeClaimed(this.claim, this.done, this.fds, this.written, job, (fd) => writeOnce(fd, bytes))
    if (!this.allWritten(fds.length)) {
      this.broken = true
      void this.worker?.terminate()
    }
    return Array.from(this.written.subarray(0, fds.length))
  }

  /** Sockets the second thread wrote, in all. */
  get writtenBySecondThread(): number {
    return Atomics.load(this.control, 1)
  }

  /**
   * Starts the second thread once, ahead of the first write that needs it (a thread takes tens of milliseconds to
   * start). Returns whether it is started; one that fails is not used again (every write stays on the event loop).
   */
  start(): boolean {
    if (this.worker) return true
    if (this.broken) return false
    try {
      this.worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          claim: this.claim,
          done: this.done,
          control: this.control,
          fds: this.fds,
          written: this.written,
          bytes: this.bytes.buffer
        }
      })
    } catch {
      this.broken = true
      return false
    }
    this.worker.unref() // it waits for work forever: never a reason to keep the process alive
    this.worker.on('error', () => (this.broken = true))
    return true
  }

  /** Waits for the second thread to finish the sockets it took; false when it did not in time. */
  private allWritten(count: number): boolean {
    const deadline = Date.now() + WORKER_DEADLINE_MS
    for (let done = Atomics.load(this.done, 0); done < count; done = Atomics.load(this.done, 0)) {
      const left = deadline - Date.now()
      if (left <= 0) return false
      Atomics.wait(this.done, 0, done, left)
    }
    return true
  }
}

/** From this many sockets on, one buffer is written to them by two threads. */
export const PARALLEL_FROM = 256

/** The process's second writing thread, shared by SSE streams and long-polls. */
export const parallelWrites = new ParallelSocketWrites()

/**
 * `bytes` to every socket (each with nothing queued in Node), straight to its descriptor (`fds`, in the same order) by
 * two threads; what a socket's kernel buffer did not take goes through the socket as usual, where errors are handled.
 */
export function writeToSockets(sockets: readonly Socket[], fds: readonly number[], bytes: Buffer): void {
  const written = parallelWrites.write(fds, bytes)
  sockets.forEach((socket, i) => {
    const taken = written[i] ?? 0
    if (taken < bytes.length) socket.write(bytes.subarray(taken))
  })
}

/** A connected socket's descriptor; stable until the socket is destroyed. */
export function descriptorOf(socket: Socket): number | null {
  // net.Socket has no public accessor for its descriptor; its libuv handle's is stable across Node versions
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd
  return typeof fd === 'number' && fd >= 0 ? fd : null
}
