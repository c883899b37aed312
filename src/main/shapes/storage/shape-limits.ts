import { statfs } from 'node:fs/promises'
import { formatBytes } from '../../../shared/format-bytes'
import type { Shape } from './shape'

/** The shape server's bounds: how many shapes it keeps, and how many bytes their files may take. */
export interface ShapeLimitSettings {
  /** `--max-shapes`: past it, the least recently used shapes are dropped (their clients refetch). */
  maxShapes: number
  /** `--max-disk` in bytes; null: half of what is free on the shapes' disk when the engine starts. */
  maxDiskBytes: number | null
}

export const DEFAULT_MAX_SHAPES = 100_000
/** A definition whose snapshot did not fit is refused this long without building it again (a 409 loop otherwise). */
const TOO_LARGE_REMEMBERED_MS = 60_000
const TOO_LARGE_KEPT = 1_000

/** One shape's snapshot alone needs more than the disk budget: it is refused (413) rather than built and dropped. */
export class ShapeTooLargeError extends Error {
  override readonly name = 'ShapeTooLargeError'

  constructor(readonly limitBytes: number) {
    super(
      `the shape needs more than the shape server's disk budget of ${formatBytes(limitBytes)} (--max-disk): narrow its where or columns, or raise --max-disk`
    )
  }
}

/** Half of what is free on the disk of `dir` now, plus what the shapes there already take. */
export async function defaultDiskBudget(dir: string, used: number): Promise<number> {
  const disk = await statfs(dir)
  return used + Math.floor((disk.bavail * disk.bsize) / 2)
}

/**
 * The active shapes in the order they were last used (a Set keeps insertion order: a use moves a shape to the end in
 * O(1)), and the choice of which to drop when there are too many or their files take too much disk. Disk use is
 * summed when asked (after a snapshot chunk, and on the registry's timer), never per change.
 */
export class ShapeLimits {
  private readonly recentlyUsed = new Set<Shape>()
  /** Definitions (by identity) whose snapshot alone passed the disk budget, until when they are refused. */
  private readonly tooLarge = new Map<string, { error: ShapeTooLargeError; until: number }>()
  /** Uses counted so far: a shape's `useSequence` orders it among the others (the debug inventory pages by it). */
  private uses = 0

  constructor(
    readonly maxShapes: number,
    public maxDiskBytes: number
  ) {}

  get size(): number {
    return this.recentlyUsed.size
  }

  add(shape: Shape): void {
    this.recentlyUsed.add(shape)
    shape.useSequence = ++this.uses
  }

  /** A request used the shape: it becomes the most recently used. */
  used(shape: Shape): void {
    if (!this.recentlyUsed.delete(shape)) return
    this.recentlyUsed.add(shape)
    shape.useSequence = ++this.uses
    shape.lastUsedAt = Date.now()
  }

  /** The active shapes, least recently used (the next to be dropped for the limits) first. */
  byLastUse(): IterableIterator<Shape> {
    return this.recentlyUsed.values()
  }

  remove(shape: Shape): void {
    this.recentlyUsed.delete(shape)
  }

  /** Bytes the active shapes' files take. */
  diskUsed(): number {
    let total = 0
    for (const shape of this.recentlyUsed) total += shape.diskBytes
    return total
  }

  /** The least recently used shapes past `maxShapes`, never `keep` (the shape just created). */
  overCount(keep: Shape | null): Shape[] {
    const victims: Shape[] = []
    let excess = this.recentlyUsed.size - this.maxShapes
    for (const shape of this.recentlyUsed) {
      if (excess <= 0) break
      if (shape === keep) continue
      victims.push(shape)
      excess -= 1
    }
    return victims
  }

  /**
   * The least recently used shapes to drop so that the rest fit the disk budget, never `keep` (the shape whose
   * snapshot grows); throws ShapeTooLargeError when `keep` alone does not fit.
   */
  overDisk(keep: Shape | null): Shape[] {
    if (keep && keep.diskBytes > this.maxDiskBytes) throw new ShapeTooLargeError(this.maxDiskBytes)
    const victims: Shape[] = []
    let excess = this.diskUsed() - this.maxDiskBytes
    for (const shape of this.recentlyUsed) {
      if (excess <= 0) break
      if (shape === keep) continue
      victims.push(shape)
      excess -= shape.diskBytes
    }
    return victims
  }

  /** Why a definition is refused without being built (its snapshot did not fit a moment ago); null when it is not. */
  refusal(identity: string): ShapeTooLargeError | null {
    const refused = this.tooLarge.get(identity)
    if (refused && refused.until > Date.now()) return refused.error
    this.tooLarge.delete(identity)
    return null
  }

  refuse(identity: string, error: ShapeTooLargeError): void {
    this.tooLarge.delete(identity)
    this.tooLarge.set(identity, { error, until: Date.now() + TOO_LARGE_REMEMBERED_MS })
    for (const oldest of this.tooLarge.keys()) {
      if (this.tooLarge.size <= TOO_LARGE_KEPT) break
      this.tooLarge.delete(oldest)
    }
  }
}
