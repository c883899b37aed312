import { closeSync, openSync, readFileSync } from 'node:fs'

/** Descriptors kept when the open-files limit cannot be read. */
const FALLBACK_LIMIT = 1024
/** Share of the process's open-files limit that shape logs may hold; sockets and Postgres connections need the rest. */
const LIMIT_SHARE = 4
const MIN_DESCRIPTORS = 16
const MAX_DESCRIPTORS = 8192

/**
 * Open descriptors of shape log files, the least recently used closed first: a busy shape appends with two
 * positional writes instead of opening and closing both of its files every time, and thousands of idle shapes hold
 * none. A path is forgotten (and its descriptor closed) when its shape is dropped, so a new file there is opened anew.
 */
export class LogDescriptors {
  /** path → descriptor, in the order of last use (a Map keeps insertion order). */
  private readonly open = new Map<string, number>()

  constructor(readonly budget: number) {
    if (budget < 2) throw new RangeError('a log needs two descriptors at once')
  }

  /** The descriptor of `path` opened for reading and writing. */
  get(path: string): number {
    const kept = this.open.get(path)
    if (kept !== undefined) {
      this.open.delete(path)
      this.open.set(path, kept)
      return kept
    }
    const fd = this.openEvicting(path)
    this.open.set(path, fd)
    if (this.open.size > this.budget) this.closeOldest(this.open.size - this.budget)
    return fd
  }

  private openEvicting(path: string): number {
    try {
      return openSync(path, 'r+')
    } catch (error) {
      // The process ran out of descriptors elsewhere (many sockets): give back half of ours and try once more.
      if ((error as NodeJS.ErrnoException).code !== 'EMFILE' || this.open.size === 0) throw error
      this.closeOldest(Math.ceil(this.open.size / 2))
      return openSync(path, 'r+')
    }
  }

  private closeOldest(count: number): void {
    for (const [path, fd] of this.open) {
      if (count-- <= 0) return
      this.open.delete(path)
      closeSync(fd)
    }
  }

  /** Closes the descriptors of these paths, if open. */
  forget(...paths: string[]): void {
    for (const path of paths) {
      const fd = this.open.get(path)
      if (fd === undefined) continue
      this.open.delete(path)
      closeSync(fd)
    }
  }

  get size(): number {
    return this.open.size
  }
}

/** The soft open-files limit of this process (Linux: /proc/self/limits), or a conservative guess elsewhere. */
export function openFilesLimit(limits = readLimits()): number {
  const soft = /^Max open files\s+(\d+|unlimited)/m.exec(limits)?.[1]
  if (soft === undefined) return FALLBACK_LIMIT
  return soft === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(soft)
}

function readLimits(): string {
  try {
    return readFileSync('/proc/self/limits', 'utf8')
  } catch {
    return ''
  }
}

/** How many log descriptors a process with this open-files limit may keep. */
export function descriptorBudget(limit: number): number {
  return Math.min(MAX_DESCRIPTORS, Math.max(MIN_DESCRIPTORS, Math.floor(limit / LIMIT_SHARE)))
}

/** The descriptors every shape log of this process shares. */
export const logDescriptors = new LogDescriptors(descriptorBudget(openFilesLimit()))
