import { setImmediate as nextTurn } from 'node:timers/promises'

/**
 * Long synchronous work cut into slices of about `sliceMs`: between slices the event loop runs what is waiting
 * (requests, timers, I/O) before the work goes on.
 */
export class TimeSlices {
  private sliceStart = performance.now()

  constructor(private readonly sliceMs: number) {}

  /** Lets the event loop run when the current slice has used its time; otherwise resolves at once. */
  async yieldIfDue(): Promise<void> {
    if (performance.now() - this.sliceStart < this.sliceMs) return
    await nextTurn()
    this.sliceStart = performance.now()
  }
}
