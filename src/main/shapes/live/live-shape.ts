import { type LogOffset, compareOffsets } from '../storage/offset'
import type { Shape } from '../storage/shape'
import type { Cancellation } from './cancellation'
import { LongPolls } from './long-polls'
import { PreparedAnswers } from './prepared-answers'
import { SseHub } from './sse'

type Wake = () => void

/**
 * Everything that waits for one shape's next change: requests waiting for its snapshot or its log to grow, its live
 * long-polls (in groups) and SSE streams (in a hub), and the answers shared by identical requests at its log's end.
 * The shape's change signal (`changed`) is its only input.
 */
export class LiveShape {
  private readonly waiters = new Set<Wake>()
  readonly longPolls = new LongPolls(this)
  readonly streams = new SseHub(this)
  readonly prepared = new PreparedAnswers()

  constructor(readonly shape: Shape) {}

  /** The shape changed: everything waiting for it is woken, synchronously, in one go. */
  changed(): void {
    const waiters = [...this.waiters]
    this.waiters.clear()
    for (const wake of waiters) wake()
  }

  /** Whether a long-poll at `from` has something to be answered with: new entries, or its shape gone or failed. */
  hasNews(from: LogOffset): boolean {
    const { shape } = this
    return compareOffsets(shape.lastOffset, from) > 0 || shape.invalidated || shape.failure !== null
  }

  /**
   * Calls `then` once, synchronously, on the next change of the shape, after `ms`, or on cancel. Synchronous so that
   * one change answers every waiting long-poll in one go.
   */
  onChange(then: () => void, ms: number, cancellation?: Cancellation): void {
    const done = () => {
      clearTimeout(timer)
      this.waiters.delete(done)
      stopListening?.()
      then()
    }
    const timer = setTimeout(done, ms)
    this.waiters.add(done)
    const stopListening = cancellation?.onCancel(done)
  }

  /** Waits until `until()` holds or `ms` have passed; returns whether it holds. */
  async waitFor(until: () => boolean, ms: number, cancellation?: Cancellation): Promise<boolean> {
    const { shape } = this
    const deadline = Date.now() + ms
    while (!until()) {
      const left = deadline - Date.now()
      if (left <= 0 || shape.invalidated || shape.failure || cancellation?.cancelled) return until()
      await new Promise<void>((resolve) => this.onChange(resolve, left, cancellation))
    }
    return true
  }
}
