import type { Shape } from '../storage/shape'
import { LiveShape } from './live-shape'

/**
 * The live stage: what waits for shapes to change. A shape gets its LiveShape when something first waits for it, and
 * from then on its change signal feeds it; the LiveShape goes with its shape.
 */
export class Live {
  private readonly shapes = new WeakMap<Shape, LiveShape>()

  of(shape: Shape): LiveShape {
    const existing = this.shapes.get(shape)
    if (existing) return existing
    const live = new LiveShape(shape)
    shape.changed = () => live.changed()
    this.shapes.set(shape, live)
    return live
  }

  /** Live long-polls of `shape` held now, waiting for its next change. */
  heldLongPolls(shape: Shape): number {
    return this.shapes.get(shape)?.longPolls.held ?? 0
  }

  /** SSE streams of `shape` open now. */
  openSseStreams(shape: Shape): number {
    return this.shapes.get(shape)?.streams.open ?? 0
  }
}
