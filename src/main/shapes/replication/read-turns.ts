/** What ReadTurns needs of a readable socket. */
export interface PausableStream {
  pause(): void
  resume(): void
}

/**
 * Keeps the walsender socket from taking whole event-loop turns. libuv reads a socket up to 32 times in one poll phase
 * and pg decodes every message of each read at once, so a large transaction used to be decoded in one turn (85 ms for a
 * 3,000-row UPDATE with its old rows, measured by bench target 6). Once a turn has spent `sliceMs` on messages, reading
 * stops until the next turn. The consumer's own hold (its queue is full) is kept apart: neither lifts the other.
 */
export class ReadTurns {
  private turnStart: number | null = null
  private yielding = false
  private held = false

  constructor(
    private readonly stream: PausableStream,
    private readonly sliceMs: number
  ) {}

  /** Called as each message has been handled. */
  messageHandled(): void {
    const now = performance.now()
    if (this.turnStart === null) {
      this.turnStart = now
      setImmediate(() => this.turnEnded())
    } else if (!this.yielding && now - this.turnStart >= this.sliceMs) {
      this.yielding = true
      this.stream.pause()
    }
  }

  hold(): void {
    this.held = true
    this.stream.pause()
  }

  release(): void {
    this.held = false
    this.flow()
  }

  private turnEnded(): void {
    this.turnStart = null
    if (!this.yielding) return
    this.yielding = false
    this.flow()
  }

  private flow(): void {
    if (!this.held && !this.yielding) this.stream.resume()
  }
}
