import type { LogOffset } from '../storage/offset'
import type { Shape } from '../storage/shape'
import type { Cancellation } from './cancellation'

/**
 * What the long-poll groups and the SSE hub ask of the shape they wait on (its LiveShape): the shape, whether it has
 * news past an offset, and a wake-up at its next change.
 */
export interface ShapeNews {
  readonly shape: Shape
  hasNews(from: LogOffset): boolean
  onChange(then: () => void, ms: number, cancellation?: Cancellation): void
}
