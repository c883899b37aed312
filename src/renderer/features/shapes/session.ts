import type { Recording } from '../../../shared/doctor-recording'
import type {
  LiveMode,
  ResolvableRecord,
  ShapeDraft,
  ShapeStreamError,
  ShapeStreamOptions,
  Subset,
  SubsetMethod
} from '../../../shared/shape-client'
import type {
  Ask,
  EngineConfig,
  FromEngine,
  Port,
  Summary,
  ToEngine,
  ViewData,
  ViewQuery,
  WireOnErrorResult,
  WireState
} from './engine/protocol'
import { errorFromWire, errorToWire, recordToWire } from './engine/wire'

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
  /** Where the server tells commit and append times (a Syncscope server's `/v1/debug/commit-times`), if it may. */
  commitTimes?: { url: string; params: Record<string, string> } | null
}

/** How long a changed row stays highlighted. */
export const FLASH_MS = 1_500

/** The session's stream as the page sees it: its state (with the error as a ShapeStreamError) and counts. */
export type SessionSummary = Omit<Summary, 'state'> & {
  state: Omit<WireState, 'error'> & { error: ShapeStreamError | null }
}

/** A worker (or, in tests, a MessagePort) to run the engine in; `end` lets it go. */
export interface EngineChannel {
  port: Port
  end(): void
}

/**
 * One run of a shape in the workbench, as the page holds it: the stream runs in the workbench's worker (responses
 * parsed, rows kept there, see engine/), and the page gets a summary and the windows of the views it shows.
 * Views re-render on `version`, bumped at most once per animation frame.
 */
export class WorkbenchSession {
  summary: SessionSummary | null = null
  private readonly data = new Map<string, ViewData>()
  private readonly queries = new Map<string, ViewQuery>()
  private readonly remotes = new Map<number, (...args: never[]) => unknown>()
  private readonly asks = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  private readonly listeners = new Set<() => void>()
  private nextId = 1
  private version = 0
  private scheduled = false
  private viewsPosted = false
  private ended = false
  private final: Promise<Recording> | null = null

  constructor(
    readonly config: SessionConfig,
    private readonly channel: EngineChannel,
    notes: string[] = []
  ) {
    channel.port.onmessage = (event) => this.receive(event.data as FromEngine)
    const engineConfig: EngineConfig = {
      url: config.url,
      definition: config.definition,
      headers: recordToWire(config.headers, (call) => this.remember(call)),
      params: config.params,
      onError: config.onError !== undefined,
      live: config.live,
      offset: config.offset,
      clients: config.clients,
      commitTimes: config.commitTimes ?? null,
      notes
    }
    this.post({ type: 'start', config: engineConfig })
  }

  private post(message: ToEngine): void {
    if (!this.ended) this.channel.port.postMessage(message)
  }

  stop(): void {
    this.post({ type: 'stop' })
  }

  /**
   * Stops the stream and lets the worker go, with its rows: only the recording stays (the Sync doctor's list of
   * sessions), taken before the worker ends.
   */
  end(): void {
    if (this.final) return
    this.stop()
    this.final = this.ask({ kind: 'recording' }) as Promise<Recording>
    void this.final
      .catch(() => undefined)
      .finally(() => {
        this.ended = true
        this.channel.end()
      })
  }

  /** A line for the Log (something that happened outside the stream's requests, e.g. a gatekeeper's new grant). */
  note(text: string): void {
    this.post({ type: 'note', text })
  }

  /**
   * Drops the shape on its server (`DELETE` with the definition and the current handle): every client of it gets 409
   * must-refetch on its next request and starts again, which the Log and Requests views then show.
   */
  async drop(): Promise<void> {
    await this.ask({ kind: 'drop' })
  }

  /** Fetches a subset into the rows; resolves with its number for the `subset` view. */
  requestSnapshot(subset: Subset, options: { method: SubsetMethod }): Promise<number> {
    return this.ask({ kind: 'subset', subset, method: options.method }) as Promise<number>
  }

  /** Every client's exchanges as a Syncscope recording, for the Sync doctor. */
  recording(): Promise<Recording> {
    return this.final ?? (this.ask({ kind: 'recording' }) as Promise<Recording>)
  }

  /** Shows a view: its data comes with the next updates (`view(id)`), until `hideView`. */
  showView(id: string, query: ViewQuery): void {
    this.queries.set(id, query)
    this.postViews()
  }

  hideView(id: string): void {
    this.queries.delete(id)
    this.data.delete(id)
    this.postViews()
  }

  view(id: string): ViewData | undefined {
    return this.data.get(id)
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  readonly getVersion = (): number => this.version

  /** Several views changing at once (a tab opened) go to the worker in one message. */
  private postViews(): void {
    if (this.viewsPosted) return
    this.viewsPosted = true
    queueMicrotask(() => {
      this.viewsPosted = false
      this.post({ type: 'views', views: Object.fromEntries(this.queries) })
    })
  }

  private ask(ask: Ask): Promise<unknown> {
    const id = this.nextId++
    this.post({ type: 'ask', id, ask })
    return new Promise((resolve, reject) => this.asks.set(id, { resolve, reject }))
  }

  private remember(call: (...args: never[]) => unknown): number {
    const id = this.nextId++
    this.remotes.set(id, call)
    return id
  }

  private receive(message: FromEngine): void {
    if (message.type === 'answer') {
      const ask = this.asks.get(message.id)
      this.asks.delete(message.id)
      if (message.error) ask?.reject(errorFromWire(message.error))
      else ask?.resolve(message.value)
    } else if (message.type === 'remote') {
      void this.runRemote(message)
    } else {
      const { state, ...rest } = message.summary
      // the same error keeps its identity, so what shows it does not render again
      const last = this.summary?.state.error ?? null
      const same =
        last !== null &&
        state.error !== null &&
        last.message === state.error.message &&
        last.status === state.error.status &&
        last.body === state.error.body
      const error = state.error === null ? null : same ? last : errorFromWire(state.error)
      this.summary = { ...rest, state: { ...state, error } }
      for (const [id, view] of Object.entries(message.views)) if (this.queries.has(id)) this.data.set(id, view)
      this.scheduleRender()
    }
  }

  /** Runs a function of the config for the worker: a header's value, or onError (whose answer may hold functions). */
  private async runRemote(message: Extract<FromEngine, { type: 'remote' }>): Promise<void> {
    try {
      let value: unknown
      if (message.call.kind === 'resolve') {
        const call = this.remotes.get(message.call.remote) as (() => unknown) | undefined
        value = await call?.()
      } else {
        const answer = await this.config.onError?.(errorFromWire(message.call.error))
        const wire: WireOnErrorResult = answer
          ? {
              ...(answer.headers ? { headers: recordToWire(answer.headers, (call) => this.remember(call)) } : {}),
              ...(answer.params ? { params: recordToWire(answer.params, (call) => this.remember(call)) } : {})
            }
          : null
        value = wire
      }
      this.post({ type: 'answer', id: message.id, value })
    } catch (error) {
      this.post({ type: 'answer', id: message.id, error: errorToWire(error) })
    }
  }

  private scheduleRender(): void {
    if (this.scheduled) return
    this.scheduled = true
    requestAnimationFrame(() => {
      this.scheduled = false
      this.version += 1
      for (const listener of this.listeners) listener()
      this.post({ type: 'ack' })
    })
  }
}
