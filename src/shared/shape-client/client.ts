import type { TransitionTable } from '../machine'
import { isReservedParam, OFFSET_NOW, OFFSET_START } from '../protocol'
import { backoffDelay, DEFAULT_BACKOFF, retryAfterMs, sleep, type BackoffOptions } from './backoff'
import { ShapeStreamError } from './errors'
import type { ChangeMessage, MessageBatch } from './messages'
import type { Offset } from './offsets'
import { SnapshotFilter, snapshotEnd, type AppliedSnapshot } from './snapshot-filter'
import { fetchSubset, type Subset, type SubsetMethod, type SubsetResult } from './subset'
import { readProtocolHeaders } from './protocol-headers'
import { ShapeRecorder, type HeaderList, type LiveMode } from './recorder'
import { resolveRecord, type ResolvableRecord } from './resolve'
import { mustRefetch, readResponse, type ResponseContext } from './stream-response'
import {
  initialStreamState,
  nextStreamState,
  streamTransitions,
  type Answer,
  type ShapeStreamState,
  type StreamEffect,
  type StreamEvent,
  type StreamMachineState
} from './stream-state'

/** What onError may answer: new headers/params (merged) or `{}` to retry, nothing to stop. */
export type OnErrorResult = void | undefined | { headers?: ResolvableRecord; params?: ResolvableRecord }

export interface ShapeStreamOptions {
  /** The shape endpoint, e.g. `http://127.0.0.1:3000/v1/shape` or a proxy's path. */
  url: string
  /** The shape definition and any other query parameters (`table`, `where`, `params[1]`, `secret`…). */
  params: ResolvableRecord
  headers?: ResolvableRecord
  /** `-1` (default): the whole log; `now`: only what happens from here on. */
  offset?: Offset
  handle?: string
  log?: 'full' | 'changes_only'
  /** After the initial sync: stop (`off`), long-poll (default) or SSE. */
  live?: LiveMode
  onError?: (error: ShapeStreamError) => OnErrorResult | Promise<OnErrorResult>
  backoff?: BackoffOptions
  recorder?: ShapeRecorder
  fetch?: typeof fetch
  /** An SSE connection that ends sooner than this without delivering changes counts as closed immediately. */
  sseMinConnectionMs?: number
  /** That many immediately-closed SSE connections in a row switch the stream to long-polling. */
  sseFallbackAfter?: number
  /** A long-poll still unanswered after this long is abandoned and retried (the server answers within its timeout). */
  liveRequestTimeoutMs?: number
  /** Consecutive retries onError may ask for before the stream gives up. */
  maxOnErrorRetries?: number
  /** How `requestSnapshot` sends subsets unless told otherwise: a JSON body (default) or legacy `subset__*` parameters. */
  subsetMethod?: SubsetMethod
  /**
   * Every request carries a fresh `cache-buster` (as the official client's retries after a stale answer do), so no
   * shared or browser cache answers it: for tools that must read the log as the origin holds it now.
   */
  bypassCaches?: boolean
  random?: () => number
}

/** Times a subset request follows a 409 to the shape's new handle before giving up (as the official client). */
const MAX_SUBSET_REFETCHES = 5

class Aborted extends Error {}

/**
 * A shape as a stream of log messages: initial sync (chained requests until up-to-date), then live (long-poll or SSE,
 * falling back to long-poll when a proxy buffers), restarting from `-1` on must-refetch. Retries 5xx and network
 * errors with capped, jittered backoff; hands 4xx to `onError`. Everything it does goes to the recorder.
 *
 * What to do next is the machine's decision (stream-state.ts): this class feeds it what happened (answers, waits,
 * onError's reply, stop) and carries out its effects (requests, waits, notes, publishing).
 */
export class ShapeStream {
  readonly recorder: ShapeRecorder
  private readonly controller = new AbortController()
  private readonly batchListeners = new Set<(batch: MessageBatch) => void>()
  private readonly stateListeners = new Set<(state: ShapeStreamState) => void>()
  private headers: ResolvableRecord
  private params: ResolvableRecord
  private machine: StreamMachineState
  private readonly transitions: TransitionTable<StreamMachineState, StreamEvent, StreamEffect>
  private running: Promise<void> | null = null
  private readonly snapshotFilter = new SnapshotFilter(
    (batch) => this.deliver(batch),
    (message, snapshot) => this.noteDropped(message, snapshot)
  )
  /** Aborts the request in flight when a subset's 409 restarts the stream; `generation` tells its answer is stale. */
  private attemptAbort = new AbortController()
  private generation = 0
  /** What reading a response needs of the stream. */
  private readonly responseContext: ResponseContext

  constructor(private readonly options: ShapeStreamOptions) {
    if (!URL.canParse(options.url) || !/^https?:$/.test(new URL(options.url).protocol))
      throw new Error(`not an http(s) URL: ${options.url}`)
    const reserved = Object.keys(options.params).filter(isReservedParam)
    if (reserved.length > 0)
      throw new Error(`these parameters are set by the stream, not as params: ${reserved.join(', ')}`)
    const offset = options.offset ?? OFFSET_START
    if (offset !== OFFSET_START && offset !== OFFSET_NOW && !options.handle)
      throw new Error(`offset ${offset} needs a handle`)
    this.recorder = options.recorder ?? new ShapeRecorder()
    this.responseContext = {
      recorder: this.recorder,
      state: () => this.state,
      feed: (event) => this.feed(event),
      publish: (batch) => this.snapshotFilter.publish(batch)
    }
    this.headers = { ...options.headers }
    this.params = { ...options.params }
    this.transitions = streamTransitions({
      live: options.live ?? 'long-poll',
      sseMinConnectionMs: options.sseMinConnectionMs ?? 1_000,
      sseFallbackAfter: options.sseFallbackAfter ?? 3,
      maxOnErrorRetries: options.maxOnErrorRetries ?? 50
    })
    this.machine = initialStreamState({
      brand: null,
      handle: options.handle ?? null,
      offset,
      cursor: null,
      schema: null,
      upToDate: false,
      liveMode: options.live ?? 'long-poll',
      sseFellBack: false,
      error: null
    })
  }

  get current(): ShapeStreamState {
    return this.machine.stream
  }

  private get state(): ShapeStreamState {
    return this.machine.stream
  }

  /** Every batch of messages, in log order (a must-refetch batch tells the listener to drop what it has). */
  subscribe(listener: (batch: MessageBatch) => void): () => void {
    this.batchListeners.add(listener)
    return () => this.batchListeners.delete(listener)
  }

  /** The subset snapshots applied since the last must-refetch… and before: each with the changes it made redundant. */
  get snapshots(): readonly AppliedSnapshot[] {
    return this.snapshotFilter.applied
  }

  onState(listener: (state: ShapeStreamState) => void): () => void {
    this.stateListeners.add(listener)
    return () => this.stateListeners.delete(listener)
  }

  /** Starts the stream; the promise settles when it stops, fails or (live `off`) is up to date. */
  start(): Promise<void> {
    this.running ??= this.run().catch((error: unknown) => {
      if (error instanceof Aborted || this.controller.signal.aborted) return
      const failure =
        error instanceof ShapeStreamError
          ? error
          : new ShapeStreamError('protocol', (error as Error).message, this.options.url)
      this.feed({ kind: 'failed', error: failure })
    })
    return this.running
  }

  stop(): void {
    if (this.controller.signal.aborted) return
    this.controller.abort(new Aborted('stopped'))
    this.feed({ kind: 'stop' })
  }

  /** Feeds the machine an event: its state is published, then its effects are carried out until one answers. */
  private async step(event: StreamEvent): Promise<StreamEvent | null> {
    let next: StreamEvent | null = null
    for (const effect of this.transition(event)) {
      // a listener may stop the stream while a batch is published: nothing the step asked for goes on
      if (this.controller.signal.aborted) return null
      next = (await this.act(effect)) ?? next
    }
    return next
  }

  /** An event from outside the loop (stop, a subset's refetch, an SSE stream's progress): no effect of it answers. */
  private feed(event: StreamEvent): void {
    for (const effect of this.transition(event)) void this.act(effect)
  }

  private transition(event: StreamEvent): readonly StreamEffect[] {
    const before = this.machine.stream
    const { state, effects } = nextStreamState(this.transitions, this.machine, event)
    this.machine = state
    if (state.stream !== before) for (const listener of this.stateListeners) listener(state.stream)
    return effects
  }

  private async act(effect: StreamEffect): Promise<StreamEvent | null> {
    switch (effect.kind) {
      case 'request':
        return this.request(effect.live)
      case 'publish':
        this.snapshotFilter.publish({ messages: effect.messages, requestId: effect.requestId })
        return null
      case 'deliver':
        this.deliver({ messages: effect.messages, requestId: effect.requestId })
        return null
      case 'restart':
        this.generation += 1
        this.attemptAbort.abort()
        this.attemptAbort = new AbortController()
        this.snapshotFilter.reset()
        return null
      case 'back-off':
        await this.backOff(effect)
        return { kind: 'waited' }
      case 'sse-pause':
        await this.ssePause(effect.closed, effect.durationMs)
        return { kind: 'waited' }
      case 'ask-on-error':
        return { kind: 'on-error-answered', retry: await this.askOnError(effect.error), error: effect.error }
      case 'note':
        this.recorder.note(effect.level, effect.text)
        return null
      case 'continue':
        return { kind: 'continue' }
    }
  }

  /**
   * Fetches a subset of the shape at the stream's handle and offset, publishes its rows (inserts, applied as upserts)
   * and a `snapshot-end` with its metadata, and from then on drops the changes the snapshot already contains. A 409
   * restarts the stream and follows it to the new handle; 401/403 go through onError; other errors are thrown.
   */
  async requestSnapshot(subset: Subset, options: { method?: SubsetMethod } = {}): Promise<AppliedSnapshot> {
    const method = options.method ?? this.options.subsetMethod ?? 'POST'
    this.snapshotFilter.begin()
    let outcome: { applied: AppliedSnapshot; requestId: number } | null = null
    try {
      const result = await this.fetchSnapshot(subset, method)
      this.recorder.message(result.requestId, snapshotEnd(result.metadata), null)
      outcome = {
        applied: { metadata: result.metadata, rows: result.rows, method, dropped: [] },
        requestId: result.requestId
      }
      return outcome.applied
    } finally {
      this.snapshotFilter.end(outcome)
    }
  }

  private async fetchSnapshot(subset: Subset, method: SubsetMethod): Promise<SubsetResult> {
    let refetches = 0
    let onErrorRetries = 0
    for (;;) {
      const [headers, params] = await Promise.all([resolveRecord(this.headers), resolveRecord(this.params)])
      const request = {
        url: this.options.url,
        params: { ...params, ...this.protocolParams() },
        headers,
        subset,
        method
      }
      try {
        return await fetchSubset(request, {
          recorder: this.recorder,
          fetch: this.options.fetch,
          signal: this.controller.signal
        })
      } catch (error) {
        if (!(error instanceof ShapeStreamError)) throw error
        if (error.status === 409 && refetches++ < MAX_SUBSET_REFETCHES) {
          const handle = readProtocolHeaders(new Headers(error.headers), this.state.brand).handle
          const requestId = this.recorder.exchanges.at(-1)?.request.id ?? -1
          this.feed({ kind: 'refetch', answer: mustRefetch(handle, [], requestId) })
          continue
        }
        if (error.kind !== 'credentials' || ++onErrorRetries > (this.options.maxOnErrorRetries ?? 50)) throw error
        if (!(await this.askOnError(error))) throw error
      }
    }
  }

  private noteDropped(message: ChangeMessage, snapshot: AppliedSnapshot): void {
    const txids = Array.isArray(message.headers.txids) ? ` (transaction ${String(message.headers.txids[0])})` : ''
    this.recorder.note(
      'info',
      `dropped the ${message.headers.operation} of ${message.key}${txids}: subset snapshot ${snapshot.metadata.snapshot_mark} already contains it`
    )
  }

  private deliver(batch: MessageBatch): void {
    for (const listener of this.batchListeners) listener(batch)
  }

  private async run(): Promise<void> {
    for (let event: StreamEvent | null = { kind: 'start' }; event;) event = await this.step(event)
  }

  /** One request; what it came back with (a request abandoned for a subset's refetch: go on). */
  private async request(live: LiveMode): Promise<StreamEvent> {
    const generation = this.generation
    const answer = await this.attempt(live).catch((error: unknown): Answer => {
      if (this.controller.signal.aborted) throw new Aborted('stopped')
      if (error instanceof ShapeStreamError && generation === this.generation) throw error
      return {
        kind: 'http-error',
        error: new ShapeStreamError('network', `network error: ${(error as Error).message}`, this.options.url),
        retryAfter: null
      }
    })
    return generation === this.generation ? { kind: 'answered', answer } : { kind: 'continue' }
  }

  /** onError's reply: whether to retry (its headers and params merged in for the next requests). */
  private async askOnError(error: ShapeStreamError): Promise<boolean> {
    this.recorder.note('error', `${error.message}${error.kind === 'credentials' ? ' (credentials needed)' : ''}`)
    const answer = this.options.onError ? await this.options.onError(error) : undefined
    if (!answer) return false
    this.headers = { ...this.headers, ...answer.headers }
    this.params = { ...this.params, ...answer.params }
    this.recorder.note(
      'info',
      `onError asked to retry${answer.headers || answer.params ? ' with new ' + [answer.headers && 'headers', answer.params && 'params'].filter(Boolean).join(' and ') : ''}`
    )
    return true
  }

  private async backOff(effect: Extract<StreamEffect, { kind: 'back-off' }>): Promise<void> {
    const { attempt, error, retryAfter } = effect
    const floor = retryAfterMs(retryAfter) ?? 0
    const wait = Math.max(floor, backoffDelay(attempt, this.options.backoff ?? DEFAULT_BACKOFF, this.options.random))
    if (effect.announce) this.recorder.note('warn', `${error.message}: retry ${attempt + 1} in ${Math.round(wait)} ms`)
    await sleep(wait, this.controller.signal)
  }

  private async ssePause(closed: number, durationMs: number): Promise<void> {
    const wait = (this.options.random ?? Math.random)() * Math.min(5_000, 100 * 2 ** closed)
    this.recorder.note(
      'info',
      `SSE connection closed after ${Math.round(durationMs)} ms; reconnecting in ${Math.round(wait)} ms`
    )
    await sleep(wait, this.controller.signal)
  }

  private async buildRequest(live: LiveMode): Promise<{ url: string; headers: Record<string, string> }> {
    const [headers, params] = await Promise.all([resolveRecord(this.headers), resolveRecord(this.params)])
    const url = new URL(this.options.url)
    for (const [name, value] of Object.entries({ ...params, ...this.protocolParams() }))
      url.searchParams.set(name, value)
    if (live !== 'off') {
      url.searchParams.set('live', 'true')
      url.searchParams.set('cursor', this.state.cursor ?? '')
    }
    if (live === 'sse') {
      url.searchParams.set('live_sse', 'true')
      headers['accept'] = 'text/event-stream'
    }
    const buster = this.machine.cacheBuster ?? (this.options.bypassCaches ? Math.random().toString(36).slice(2) : null)
    if (buster) url.searchParams.set('cache-buster', buster)
    // Sorted, so equal requests from different clients have equal URLs (what a cache keys and collapses on).
    url.searchParams.sort()
    return { url: url.toString(), headers }
  }

  /** Where the stream is in the log (offset, log, handle): what every request of it, subsets included, carries. */
  protocolParams(): Record<string, string> {
    const { offset, handle } = this.state
    const params: Record<string, string> = { offset, log: this.options.log ?? 'full' }
    if (handle && offset !== OFFSET_START && offset !== OFFSET_NOW) params.handle = handle
    return params
  }

  private async attempt(live: LiveMode): Promise<Answer> {
    const { url, headers } = await this.buildRequest(live)
    const requestId = this.recorder.request('GET', url, Object.entries(headers), live)
    const fetchImpl = this.options.fetch ?? globalThis.fetch
    let response: Response
    try {
      response = await fetchImpl(url, { headers, signal: this.requestSignal(live) })
    } catch (error) {
      this.recorder.failure(requestId, (error as Error).message)
      throw error
    }
    const responseHeaders: HeaderList = [...response.headers.entries()]
    this.recorder.response(requestId, {
      status: response.status,
      statusText: response.statusText,
      headers: responseHeaders
    })
    try {
      return await readResponse(this.responseContext, { requestId, url, response, headers: responseHeaders, live })
    } catch (error) {
      this.recorder.failure(requestId, (error as Error).message)
      throw error
    }
  }

  /** The stream's signal; for a long-poll also a watchdog, so a proxy that never answers cannot stall the stream. */
  private requestSignal(live: LiveMode): AbortSignal {
    const signals = [this.controller.signal, this.attemptAbort.signal]
    if (live === 'long-poll') signals.push(AbortSignal.timeout(this.options.liveRequestTimeoutMs ?? 45_000))
    return AbortSignal.any(signals)
  }
}
