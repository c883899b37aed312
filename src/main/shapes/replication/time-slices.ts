import { setImmediate as nextTurn } from 'node:timers/promises'

/**
 * Long synchronous work cut into slices of about `sliceMs`: between slices the event loop runs what is waiting
 * (requests, timers, I/O) before the work goes on.
 */
export class TimeSlices {
  private sliceStart = performance.now()

  constructor(private readonly sliceMs: number) {}

  /** Whether the current slice has used its time (the work should stop at its next step and yield). */
  readonly due = (): boolean => performance.now() - this.sliceStart >= this.sliceMs

  /** Lets the event loop run, and starts a new slice. */
  async yield(): Promise<void> {
    await nextTurn()
    this.sliceStart = performance.now()
  }

  /** Lets the event loop run when the current slice has used its time; otherwise resolves at once. */
  async yieldIfDue(): Promise<void> {
    if (this.due()) await this.yield()
  }
}
