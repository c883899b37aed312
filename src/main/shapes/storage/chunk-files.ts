import { join } from 'node:path'
import { type BufferPool, bufferPool } from './buffer-pool'

/** A shape's snapshot chunk files: written by snapshot/, read back, checked and served by storage. */
export const chunkPath = (dir: string, chunk: number): string => join(dir, `snapshot-${chunk}.jsonl`)

/** A finished snapshot chunk held in memory; `release()` once done with its bytes (they go back to a pool). */
export interface HeldChunk {
  bytes: Buffer
  release(): void
}

/** Room beyond `chunkBytes` for the row that crosses it, so a chunk's buffer seldom grows. */
const CHUNK_SLACK_BYTES = 64 * 1024

/** The pool of the buffers chunks of about `chunkBytes` are built in (and read back into from disk). */
export function chunkBufferPool(chunkBytes: number): BufferPool {
  return bufferPool(chunkBytes + CHUNK_SLACK_BYTES)
}
