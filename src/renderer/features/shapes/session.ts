import {
  isEventMessage,
  Shape,
  ShapeRecorder,
  ShapeStream,
  resolveRecord,
  type LiveMode,
  type Message,
  type ResolvableRecord,
  type Row,
  type RowChange,
  type ShapeDraft,
  type ShapeStreamOptions
} from '../../../shared/shape-client'

export interface SessionConfig {
  url: string
  definition: ShapeDraft
  headers: ResolvableRecord
  /** Every query parameter the stream sends besides its protocol ones: the definition's (unless a proxy sets them) and the target's. */
  params: Record<string, string>
  /** The shapes come from the app's own Postgres (local server or proxy): the workbench may read it to explain rows. */
  appDatabase?: boolean
  /** New credentials on a 401/403 (a proxy target); none: such an error stops the stream. */
  onError?: ShapeStreamOptions['onError']
  live: LiveMode
  offset: '-1' | 'now'
  /** Identical clients of the same shape, for the shared-cache simulation (what a CDN would serve and collapse). */
  clients: number
}

export interface Flash {
  kind: 'insert' | 'update'
  at: number
}

/** How long a changed row stays highlighted. */
export const FLASH_MS = 1_500

/**
 * One run of a shape in the workbench: the stream, its recorder, the rows, which rows just changed, and each update's
 * row as it was before (for the log's diff). Views re-render on `version`, bumped at most once per animation frame.
 */
export class WorkbenchSession {
  readonly shape: Shape
  /** Clients 2…N: streams only, each with its own recorder. */
  readonly companions: ShapeStream[]
  readonly flashes = new Map<string, Flash>()
  /** The row before each update message, for the log's diff. */
  readonly before = new WeakMap<Message, Row>()
  /** The keys each move-out event removed from the rows (the server sends no delete for them). */
  readonly movedOut = new WeakMap<Message, string[]>()
  /** Changes applied to the rows since the session started (must-refetch counted as a reset). */
  readonly counts = { insert: 0, update: 0, delete: 0, reset: 0 }
  private version = 0
  private scheduled = false
  private readonly listeners = new Set<() => void>()

  /** `recorder`: the first client's, given when something is noted before the stream starts (the gatekeeper's grant). */
  constructor(
    readonly config: SessionConfig,
    readonly recorder = new ShapeRecorder()
  ) {
    const options: ShapeStreamOptions = {
      url: config.url,
      params: config.params,
      headers: config.headers,
      onError: config.onError,
      log: config.definition.log,
      live: config.live,
      offset: config.offset
    }
    this.shape = new Shape({ ...options, recorder: this.recorder })
    this.companions = Array.from(
      { length: config.clients - 1 },
      () => new ShapeStream({ ...options, recorder: new ShapeRecorder() })
    )
    this.shape.subscribe((changes) => this.remember(changes))
    for (const recorder of this.recorders) recorder.subscribe(() => this.changed())
    this.shape.stream.onState(() => this.changed())
  }

  /** Every client's recorder, the first one's (whose rows are shown) first. */
  get recorders(): ShapeRecorder[] {
    return [this.recorder, ...this.companions.map((stream) => stream.recorder)]
  }

  start(): void {
    void this.shape.start()
    for (const stream of this.companions) void stream.start()
  }

  stop(): void {
    this.shape.stop()
    for (const stream of this.companions) stream.stop()
  }

  /**
   * Drops the shape on its server (`DELETE` with the definition and the current handle): every client of it gets 409
   * must-refetch on its next request and starts again, which the Log and Requests views then show.
   */
  async drop(): Promise<void> {
    const url = new URL(this.config.url)
    for (const [name, value] of Object.entries(this.config.params)) url.searchParams.set(name, value)
    const handle = this.shape.stream.current.handle
    if (handle) url.searchParams.set('handle', handle)
    const response = await fetch(url, { method: 'DELETE', headers: await resolveRecord(this.config.headers) })
    const body = await response.text()
    this.recorder.note(
      response.ok ? 'info' : 'error',
      `Drop shape: DELETE ${handle ?? '(no handle yet)'} answered ${response.status}${body ? ` ${body}` : ''}`
    )
    if (!response.ok) throw new Error(`DELETE /v1/shape answered ${response.status}${body ? `: ${body}` : ''}`)
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  readonly getVersion = (): number => this.version

  private remember(changes: RowChange[]): void {
    const at = performance.now()
    for (const change of changes) {
      this.counts[change.kind] += 1
      if (change.kind === 'reset') this.flashes.clear()
      else if (change.kind === 'delete') this.flashes.delete(change.key)
      else this.flashes.set(change.key, { kind: change.kind, at })
      if (change.kind === 'update') this.before.set(change.message, change.before)
      if (change.kind === 'delete' && isEventMessage(change.message))
        this.movedOut.set(change.message, [...(this.movedOut.get(change.message) ?? []), change.key])
    }
  }

  private changed(): void {
    if (this.scheduled) return
    this.scheduled = true
    requestAnimationFrame(() => {
      this.scheduled = false
      this.version += 1
      for (const listener of this.listeners) listener()
    })
  }
}
