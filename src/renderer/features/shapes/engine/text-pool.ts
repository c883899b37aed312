/** Characters per chunk of a pool (a longer value gets a chunk of its own). */
const CHUNK = 1 << 16

/**
 * Text kept in a few large strings: a value is an offset and a length into them, so a million values are a few
 * thousand strings for the garbage collector to trace, not a million. Appending is cheap; the chunk being filled is
 * joined into one string when something in it is read.
 */
export class TextPool {
  private readonly chunks: string[] = []
  private pending: string[] = []
  private pendingLength = 0
  /** Characters appended (live or not), to tell when a store is worth compacting. */
  length = 0

  /** Appends a value; returns its offset. */
  add(text: string): number {
    if (this.chunks.length === 0 || this.pendingLength + text.length > CHUNK) this.openChunk()
    const offset = (this.chunks.length - 1) * CHUNK + this.pendingLength
    this.pending.push(text)
    this.pendingLength += text.length
    this.length += text.length
    // a value longer than a chunk fills one alone
    if (text.length > CHUNK) this.openChunk()
    return offset
  }

  read(offset: number, length: number): string {
    return this.chunk(offset).slice(offset % CHUNK, (offset % CHUNK) + length)
  }

  /** Whether the value at offset is `text`, without making a string of it. */
  equals(offset: number, length: number, text: string): boolean {
    if (length !== text.length) return false
    const chunk = this.chunk(offset)
    const start = offset % CHUNK
    for (let at = 0; at < length; at += 1) if (chunk.charCodeAt(start + at) !== text.charCodeAt(at)) return false
    return true
  }

  private chunk(offset: number): string {
    const index = Math.floor(offset / CHUNK)
    if (index === this.chunks.length - 1 && this.pending.length > 1) {
      const joined = this.pending.join('')
      this.pending = [joined]
      this.chunks[index] = joined
    } else if (index === this.chunks.length - 1 && this.pending.length === 1) {
      this.chunks[index] = this.pending[0] as string
    }
    return this.chunks[index] ?? ''
  }

  private openChunk(): void {
    const last = this.chunks.length - 1
    if (last >= 0) this.chunks[last] = this.pending.join('')
    this.chunks.push('')
    this.pending = []
    this.pendingLength = 0
  }
}

/** FNV-1a over a string's UTF-16 code units. */
export function hashOf(text: string): number {
  let hash = 0x811c9dc5
  for (let at = 0; at < text.length; at += 1) hash = Math.imul(hash ^ text.charCodeAt(at), 0x01000193)
  return hash >>> 0
}
