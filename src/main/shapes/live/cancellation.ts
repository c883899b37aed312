/**
 * A request's "the client went away", for the hot path of waiting requests. An AbortSignal would do, but Node's
 * EventTarget listeners cost tens of microseconds each to add and remove, which a change waking a thousand
 * long-polls pays a thousand times.
 */
export class Cancellation {
  private readonly callbacks = new Set<() => void>()
  private done = false

  get cancelled(): boolean {
    return this.done
  }

  cancel(): void {
    if (this.done) return
    this.done = true
    for (const callback of this.callbacks) callback()
    this.callbacks.clear()
  }

  /** Runs `callback` on cancel; the returned function unregisters it. */
  onCancel(callback: () => void): () => void {
    this.callbacks.add(callback)
    return () => this.callbacks.delete(callback)
  }
}
