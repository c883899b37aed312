import {
  isEventMessage,
  MaterialisedShape,
  resolveRecord,
  ShapeRecorder,
  ShapeStream,
  type AppliedSnapshot,
  type Membership,
  type Message,
  type ResolvableRecord,
  type Row,
  type RowChange,
  type ShapeDraft,
  type ShapeStreamOptions,
  type Subset,
  type SubsetMethod
} from '../../../../shared/shape-client'
import { LatencyTracker } from './latency'
import { RecorderIndex } from './recorder-index'
import { ColumnarRowStore } from './row-store'

export interface EngineOptions {
  url: string
  definition: ShapeDraft
  headers: ResolvableRecord
  /** Every query parameter the stream sends besides its protocol ones: the definition's and the target's. */
  params: Record<string, string>
  onError?: ShapeStreamOptions['onError']
  live: ShapeStreamOptions['live'] & string
  offset: '-1' | 'now'
  /** Identical clients of the same shape, for the shared-cache simulation (what a CDN would serve and collapse). */
  clients: number
  commitTimes: { url: string; params: Record<string, string> } | null
  fetch?: typeof fetch
}

/** How long a change is remembered for the rows table's flash (longer than the flash itself). */
const FLASH_KEPT_MS = 2_000
/** Changes remembered for flashes at most (a sync of a million rows flashes only its newest). */
const FLASHES_KEPT = 20_000

export interface Flash {
  kind: 'insert' | 'update'
  /** Milliseconds since the epoch. */
  at: number
}

/** Entries the Log keeps (the recorder's bound: messages, notes, frames; the oldest go first). */
const LOG_KEPT = 50_000

/** Rows received per second over this window, for the Rows tab. */
const RATE_WINDOW_MS = 5_000

/**
 * One run of a shape in the workbench, where the messages are parsed (the worker): the stream(s), the first client's
 * rows in a columnar store, each row's last change, each update's row as it was before (the Log's diff), the rows each
 * move-out removed, the change counts, and the commit latencies. What the page shows is read from here in windows.
 */
export class WorkbenchEngine {
  readonly recorder: ShapeRecorder
  readonly stream: ShapeStream
  /** Clients 2…N: streams only, each with its own recorder. */
  readonly companions: ShapeStream[]
  readonly rows = new ColumnarRowStore()
  readonly index: RecorderIndex
  readonly latency: LatencyTracker
  /** The row before each update message, for the log's diff. */
  readonly before = new WeakMap<Message, Row>()
  /** The keys each move-out event removed from the rows (the server sends no delete for them). */
  readonly movedOut = new WeakMap<Message, string[]>()
  /** Changes applied to the rows since the session started (must-refetch counted as a reset). */
  readonly counts = { insert: 0, update: 0, delete: 0, reset: 0 }
  /**
   * The last change of each row changed in the last moments, oldest first, for the table's flash: tenths of a
   * millisecond since the engine started, negative for an insert (a small integer: no object per change).
   */
  private readonly flashes = new Map<string, number>()
  private readonly startedAt = performance.now()
  /** The subsets requested, in order. */
  readonly subsets: AppliedSnapshot[] = []
  private readonly materialised: MaterialisedShape<ColumnarRowStore>
  private readonly listeners = new Set<() => void>()
  private readonly arrivals: Array<{ at: number; changes: number }> = []

  constructor(
    readonly options: EngineOptions,
    recorder = new ShapeRecorder({ maxEntries: LOG_KEPT })
  ) {
    const streamOptions: ShapeStreamOptions = {
      url: options.url,
      params: options.params,
      headers: options.headers,
      onError: options.onError,
      log: options.definition.log,
      live: options.live,
      offset: options.offset,
      fetch: options.fetch
    }
    this.recorder = recorder
    this.stream = new ShapeStream({ ...streamOptions, recorder })
    this.companions = Array.from(
      { length: options.clients - 1 },
      () => new ShapeStream({ ...streamOptions, recorder: new ShapeRecorder() })
    )
    this.materialised = new MaterialisedShape({ log: options.definition.log }, this.rows)
    this.index = new RecorderIndex(recorder)
    this.latency = new LatencyTracker({
      endpoint: options.commitTimes,
      handle: () => this.stream.current.handle,
      changed: () => this.changed(),
      fetch: options.fetch
    })
    this.stream.subscribe((batch) => this.apply(batch.messages))
    for (const each of this.recorders) each.subscribe(() => this.changed())
    this.stream.onState(() => this.changed())
  }

  /** Every client's recorder, the first one's (whose rows are shown) first. */
  get recorders(): ShapeRecorder[] {
    return [this.recorder, ...this.companions.map((stream) => stream.recorder)]
  }

  /** Told (synchronously) of every change; the host batches them into updates of the page. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  start(): void {
    void this.stream.start()
    for (const stream of this.companions) void stream.start()
  }

  stop(): void {
    this.stream.stop()
    for (const stream of this.companions) stream.stop()
    this.latency.stop()
  }

  /** The row's change the table flashes, when it changed a moment ago. */
  flashOf(key: string): Flash | null {
    const mark = this.flashes.get(key)
    if (mark === undefined) return null
    return { kind: mark < 0 ? 'insert' : 'update', at: performance.timeOrigin + this.startedAt + Math.abs(mark) / 10 }
  }

  /** Now as the flashes count time; never 0, so the sign always tells the kind. */
  private flashClock(): number {
    return Math.max(1, Math.round((performance.now() - this.startedAt) * 10))
  }

  /** A subquery shape's row: its tags and which of its where's positions hold (null for other shapes). */
  membership(key: string): Membership | null {
    return this.materialised.membership(key)
  }

  /** Changes received per second over the last few seconds. */
  get rate(): number {
    const since = performance.now() - RATE_WINDOW_MS
    while (this.arrivals.length > 0 && (this.arrivals[0]?.at ?? 0) < since) this.arrivals.shift()
    return this.arrivals.reduce((sum, arrival) => sum + arrival.changes, 0) / (RATE_WINDOW_MS / 1000)
  }

  /** Fetches a subset into the rows; see `ShapeStream.requestSnapshot`. Returns its number among the subsets. */
  async requestSnapshot(subset: Subset, method: SubsetMethod): Promise<number> {
    const applied = await this.stream.requestSnapshot(subset, { method })
    this.subsets.push(applied)
    this.changed()
    return this.subsets.length - 1
  }

  /**
   * Drops the shape on its server (`DELETE` with the definition and the current handle): every client of it gets 409
   * must-refetch on its next request and starts again, which the Log and Requests views then show.
   */
  async drop(): Promise<void> {
    const url = new URL(this.options.url)
    for (const [name, value] of Object.entries(this.options.params)) url.searchParams.set(name, value)
    const handle = this.stream.current.handle
    if (handle) url.searchParams.set('handle', handle)
    const response = await (this.options.fetch ?? globalThis.fetch)(url, {
      method: 'DELETE',
      headers: await resolveRecord(this.options.headers)
    })
    const body = await response.text()
    this.recorder.note(
      response.ok ? 'info' : 'error',
      `Drop shape: DELETE ${handle ?? '(no handle yet)'} answered ${response.status}${body ? ` ${body}` : ''}`
    )
    if (!response.ok) throw new Error(`DELETE /v1/shape answered ${response.status}${body ? `: ${body}` : ''}`)
  }

  private apply(messages: Message[]): void {
    const changes = this.materialised.apply(messages)
    this.remember(changes)
    this.forgetOldFlashes()
    this.latency.received(messages)
    this.arrivals.push({ at: performance.now(), changes: changes.length })
    this.changed()
  }

  private remember(changes: RowChange[]): void {
    const at = this.flashClock()
    for (const change of changes) {
      this.counts[change.kind] += 1
      if (change.kind === 'reset') {
        this.latency.reset()
        this.flashes.clear()
      } else if (change.kind === 'delete') {
        this.flashes.delete(change.key)
      } else {
        // deleted first, so the map stays in time order
        this.flashes.delete(change.key)
        this.flashes.set(change.key, change.kind === 'insert' ? -at : at)
      }
      if (change.kind === 'update') this.before.set(change.message, change.before)
      if (change.kind === 'delete' && isEventMessage(change.message)) {
        const removed = this.movedOut.get(change.message)
        if (removed) removed.push(change.key)
        else this.movedOut.set(change.message, [change.key])
      }
    }
  }

  private forgetOldFlashes(): void {
    const before = this.flashClock() - FLASH_KEPT_MS * 10
    for (const [key, mark] of this.flashes) {
      if (Math.abs(mark) >= before && this.flashes.size <= FLASHES_KEPT) break
      this.flashes.delete(key)
    }
  }

  private changed(): void {
    for (const listener of this.listeners) listener()
  }
}
