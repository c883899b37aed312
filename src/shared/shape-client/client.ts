import { CONTROL, isReservedParam, OFFSET_NOW, OFFSET_START, offsetAfterLsn } from '../protocol'
import { backoffDelay, DEFAULT_BACKOFF, retryAfterMs, sleep, type BackoffOptions } from './backoff'
import { errorForStatus, ShapeStreamError } from './errors'
import {
  isMustRefetch,
  isUpToDate,
  MessageArraySchema,
  MessageSchema,
  type ChangeMessage,
  type ControlMessage,
  type Message
} from './messages'
import { isMessage, isMessageArray } from './message-check'
import { laterOffset, type Offset } from './offsets'
import { SnapshotFilter, snapshotEnd, type AppliedSnapshot } from './snapshot-filter'
import { fetchSubset, type Subset, type SubsetMethod, type SubsetResult } from './subset'
import { readProtocolHeaders, ShapeSchemaSchema, type ProtocolHeaders, type ShapeSchema } from './protocol-headers'
import { now, ShapeRecorder, type HeaderList, type LiveMode } from './recorder'
import { resolveRecord, type ResolvableRecord } from './resolve'
import { SseParser } from './sse'
import {
  initialStreamState,
  requestPhase,
  transition,
  withFields,
  type ShapeStreamState,
  type StreamFields,
  type StreamPhase
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
  random?: () => number
}

export interface MessageBatch {
  messages: Message[]
  requestId: number
}

/** Times a subset request follows a 409 to the shape's new handle before giving up (as the official client). */
const MAX_SUBSET_REFETCHES = 5

type Attempt =
  | { kind: 'messages'; messages: Message[]; headers: ProtocolHeaders; requestId: number }
  | { kind: 'sse-ended'; durationMs: number; deliveredChanges: boolean }
  | { kind: 'must-refetch'; handle: string | null; messages: Message[]; requestId: number }
  | { kind: 'http-error'; error: ShapeStreamError; retryAfter: string | null }

class Aborted extends Error {}

const SSE_TEXT_KEPT = 1_000_000

/**
 * A shape as a stream of log messages: initial sync (chained requests until up-to-date), then live (long-poll or SSE,
 * falling back to long-poll when a proxy buffers), restarting from `-1` on must-refetch. Retries 5xx and network
 * errors with capped, jittered backoff; hands 4xx to `onError`. Everything it does goes to the recorder.
 */
export class ShapeStream {
  readonly recorder: ShapeRecorder
  private readonly controller = new AbortController()
  private readonly batchListeners = new Set<(batch: MessageBatch) => void>()
  private readonly stateListeners = new Set<(state: ShapeStreamState) => void>()
  private headers: ResolvableRecord
  private params: ResolvableRecord
  private state: ShapeStreamState
  private cacheBuster: string | null = null
  private shortSseConnections = 0
  private running: Promise<void> | null = null
  private readonly snapshotFilter = new SnapshotFilter(
    (batch) => this.deliver(batch),
    (message, snapshot) => this.noteDropped(message, snapshot)
  )
  /** Aborts the request in flight when a subset's 409 restarts the stream; `generation` tells its answer is stale. */
  private attemptAbort = new AbortController()
  private generation = 0

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
    this.headers = { ...options.headers }
    this.params = { ...options.params }
    this.state = initialStreamState({
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
    return this.state
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
      this.recorder.note('error', `stream failed: ${failure.message}`)
      this.moveTo('failed', { error: failure })
    })
    return this.running
  }

  stop(): void {
    if (this.controller.signal.aborted) return
    this.controller.abort(new Aborted('stopped'))
    this.moveTo('stopped')
  }

  /** Moves to another phase, as the transition table allows (a refused move throws, and the stream fails). */
  private moveTo(phase: StreamPhase, fields?: Partial<StreamFields>): void {
    this.publishState(transition(this.state, phase, fields))
  }

  /** Records what a response, a restart or a fallback changed, in the same phase. */
  private setState(fields: Partial<StreamFields>): void {
    this.publishState(withFields(this.state, fields))
  }

  private publishState(state: ShapeStreamState): void {
    this.state = state
    for (const listener of this.stateListeners) listener(this.state)
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
          this.restart({
            kind: 'must-refetch',
            handle,
            messages: [],
            requestId: this.recorder.exchanges.at(-1)?.request.id ?? -1
          })
          continue
        }
        if (error.kind !== 'credentials' || ++onErrorRetries > (this.options.maxOnErrorRetries ?? 50)) throw error
        await this.askOnError(error)
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

  private publish(messages: Message[], requestId: number): void {
    if (messages.length === 0) return
    this.snapshotFilter.publish({ messages, requestId })
  }

  private deliver(batch: MessageBatch): void {
    for (const listener of this.batchListeners) listener(batch)
  }

  private async run(): Promise<void> {
    let failures = 0
    let onErrorRetries = 0
    for (;;) {
      const live = this.nextLiveMode()
      if (live === null) return this.moveTo('up-to-date')
      this.moveTo(requestPhase(live, this.state.sseFellBack))
      const generation = this.generation
      const attempt = await this.attempt(live).catch((error: unknown) => {
        if (this.controller.signal.aborted) throw new Aborted('stopped')
        if (error instanceof ShapeStreamError && generation === this.generation) throw error
        return {
          kind: 'http-error',
          error: new ShapeStreamError('network', `network error: ${(error as Error).message}`, this.options.url),
          retryAfter: null
        } as const
      })
      if (generation !== this.generation) continue
      if (attempt.kind === 'http-error') {
        const { error } = attempt
        if (error.kind === 'server' || error.kind === 'network') {
          await this.backOff(failures++, error, attempt.retryAfter)
          continue
        }
        if (++onErrorRetries > (this.options.maxOnErrorRetries ?? 50)) throw error
        await this.askOnError(error)
        await this.backOff(onErrorRetries - 1, error, null, false)
        continue
      }
      failures = 0
      onErrorRetries = 0
      if (attempt.kind === 'must-refetch') this.restart(attempt)
      else if (attempt.kind === 'sse-ended') await this.afterSse(attempt)
      else this.advance(attempt)
    }
  }

  /** null: nothing more to fetch (up to date, live off). */
  private nextLiveMode(): LiveMode | null {
    if (!this.state.upToDate) return 'off'
    if (this.state.liveMode === 'off') return null
    return this.state.liveMode
  }

  private async askOnError(error: ShapeStreamError): Promise<void> {
    this.recorder.note('error', `${error.message}${error.kind === 'credentials' ? ' (credentials needed)' : ''}`)
    const answer = this.options.onError ? await this.options.onError(error) : undefined
    if (!answer) throw error
    this.headers = { ...this.headers, ...answer.headers }
    this.params = { ...this.params, ...answer.params }
    this.recorder.note(
      'info',
      `onError asked to retry${answer.headers || answer.params ? ' with new ' + [answer.headers && 'headers', answer.params && 'params'].filter(Boolean).join(' and ') : ''}`
    )
  }

  private async backOff(
    attempt: number,
    error: ShapeStreamError,
    retryAfter: string | null,
    announce = true
  ): Promise<void> {
    const floor = retryAfterMs(retryAfter) ?? 0
    const wait = Math.max(floor, backoffDelay(attempt, this.options.backoff ?? DEFAULT_BACKOFF, this.options.random))
    if (announce) this.recorder.note('warn', `${error.message}: retry ${attempt + 1} in ${Math.round(wait)} ms`)
    this.moveTo('retrying')
    await sleep(wait, this.controller.signal)
  }

  private restart({ handle, messages, requestId }: Extract<Attempt, { kind: 'must-refetch' }>): void {
    this.recorder.note(
      'warn',
      `must-refetch: discarding the shape and syncing again from -1${handle ? ` with handle ${handle}` : ''}`
    )
    this.cacheBuster = Math.random().toString(36).slice(2)
    this.shortSseConnections = 0
    this.generation += 1
    this.attemptAbort.abort()
    this.attemptAbort = new AbortController()
    this.snapshotFilter.reset()
    this.setState({
      handle,
      offset: OFFSET_START,
      cursor: null,
      schema: null,
      upToDate: false,
      sseFellBack: false,
      liveMode: this.options.live ?? 'long-poll'
    })
    const refetch: ControlMessage = { headers: { control: CONTROL.mustRefetch } }
    this.deliver({ messages: messages.some(isMustRefetch) ? messages : [refetch], requestId })
  }

  private advance({ messages, headers, requestId }: Extract<Attempt, { kind: 'messages' }>): void {
    this.cacheBuster = null
    this.setState({
      brand: headers.brand,
      handle: headers.handle,
      offset: headers.offset ?? this.state.offset,
      cursor: headers.cursor ?? this.state.cursor,
      schema: this.state.schema ?? parseSchema(headers.schema),
      upToDate: this.state.upToDate || messages.some(isUpToDate)
    })
    this.publish(messages, requestId)
  }

  private async afterSse({ durationMs, deliveredChanges }: Extract<Attempt, { kind: 'sse-ended' }>): Promise<void> {
    const minimum = this.options.sseMinConnectionMs ?? 1_000
    if (durationMs >= minimum || deliveredChanges) {
      this.shortSseConnections = 0
      return
    }
    this.shortSseConnections += 1
    const limit = this.options.sseFallbackAfter ?? 3
    if (this.shortSseConnections >= limit) {
      this.recorder.note(
        'warn',
        `SSE connections closed immediately ${limit} times in a row: a proxy in the path is probably buffering responses. Falling back to long-polling.`
      )
      this.setState({ liveMode: 'long-poll', sseFellBack: true })
      return
    }
    const wait = (this.options.random ?? Math.random)() * Math.min(5_000, 100 * 2 ** this.shortSseConnections)
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
    if (this.cacheBuster) url.searchParams.set('cache-buster', this.cacheBuster)
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

  private async attempt(live: LiveMode): Promise<Attempt> {
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
      return await this.readResponse(requestId, url, response, responseHeaders, live)
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

  private async readResponse(
    requestId: number,
    url: string,
    response: Response,
    responseHeaders: HeaderList,
    live: LiveMode
  ): Promise<Attempt> {
    const protocol = readProtocolHeaders(response.headers, this.state.brand)
    if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream') && response.ok) {
      return this.readSse(requestId, url, response, protocol)
    }
    const text = await this.readText(requestId, response)
    if (response.status === 409) {
      const messages = parseMessages(text, url, 'the 409 body')
      messages.forEach((message) => this.recorder.message(requestId, message, null))
      return { kind: 'must-refetch', handle: protocol.handle, messages, requestId }
    }
    if (!response.ok)
      return {
        kind: 'http-error',
        error: errorForStatus(url, response.status, text, responseHeaders),
        retryAfter: response.headers.get('retry-after')
      }
    if (response.status === 204) {
      // Older servers' empty live answer: caught up, nothing new (the official client still accepts it).
      const upToDate: ControlMessage = { headers: { control: CONTROL.upToDate } }
      return { kind: 'messages', messages: [upToDate], headers: protocol, requestId }
    }
    const checked = this.requireHeaders(url, protocol, live)
    const messages = parseMessages(text, url, 'the response body')
    messages.forEach((message) => this.recorder.message(requestId, message, messageOffset(message) ?? checked.offset))
    const refetchAt = messages.findIndex(isMustRefetch)
    if (refetchAt !== -1)
      return { kind: 'must-refetch', handle: checked.handle, messages: messages.slice(refetchAt), requestId }
    return { kind: 'messages', messages, headers: checked, requestId }
  }

  /** Like the official client: a 2xx needs handle and offset; a live one its cursor; a non-live one its schema. */
  private requireHeaders(url: string, headers: ProtocolHeaders, live: LiveMode): ProtocolHeaders {
    const missing = [
      !headers.handle && 'handle',
      !headers.offset && 'offset',
      live !== 'off' && headers.cursor === null && 'cursor',
      live === 'off' && headers.schema === null && 'schema'
    ].filter((name): name is string => Boolean(name))
    if (missing.length > 0) {
      const names = missing.map((name) => `${headers.brand ?? '<brand>'}-${name}`).join(', ')
      throw new ShapeStreamError('protocol', `the response lacks the protocol header(s) ${names}`, url)
    }
    return headers
  }

  private async readText(requestId: number, response: Response): Promise<string> {
    const bytes = new Uint8Array(await response.arrayBuffer())
    const text = new TextDecoder().decode(bytes)
    this.recorder.body(requestId, text, bytes.byteLength)
    return text
  }

  private async readSse(
    requestId: number,
    url: string,
    response: Response,
    protocol: ProtocolHeaders
  ): Promise<Attempt> {
    const headers = this.requireHeaders(url, protocol, 'sse')
    this.setState({
      brand: headers.brand,
      handle: headers.handle,
      offset: laterOffset(headers.offset ?? this.state.offset, this.state.offset),
      cursor: headers.cursor
    })
    const openedAt = now()
    const parser = new SseParser()
    const decoder = new TextDecoder()
    let text = ''
    let size = 0
    let pending: Message[] = []
    let deliveredChanges = false
    const onFrames = (frames: ReturnType<SseParser['push']>): Attempt | null => {
      for (const frame of frames) {
        this.recorder.sseFrame(requestId, frame)
        if (frame.kind === 'comment') continue
        const message = parseMessage(frame.data, url)
        this.recorder.message(requestId, message, messageOffset(message))
        if (isMustRefetch(message))
          return { kind: 'must-refetch', handle: this.state.handle, messages: [message], requestId }
        pending.push(message)
        if (!isUpToDate(message)) continue
        deliveredChanges ||= pending.length > 1
        this.advanceFromSse(message)
        this.publish(pending, requestId)
        pending = []
      }
      return null
    }
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        const chunk = done ? decoder.decode() : decoder.decode(value, { stream: true })
        // The recorder keeps the start of a body; a stream open for hours must not grow without bound.
        if (text.length < SSE_TEXT_KEPT) text += chunk
        size += value?.byteLength ?? 0
        this.recorder.body(requestId, text, size)
        const outcome = onFrames(done ? [...parser.push(chunk), ...parser.end()] : parser.push(chunk))
        if (outcome) return outcome
        if (done) break
      }
    } finally {
      reader.releaseLock()
    }
    this.publish(pending, requestId)
    return { kind: 'sse-ended', durationMs: now() - openedAt, deliveredChanges }
  }

  /** SSE responses keep their headers for the whole stream: the resume point comes from each up-to-date's LSN. */
  private advanceFromSse(upToDate: Message): void {
    const lsn = 'control' in upToDate.headers ? upToDate.headers.global_last_seen_lsn : undefined
    this.setState({
      upToDate: true,
      offset: typeof lsn === 'string' ? laterOffset(this.state.offset, offsetAfterLsn(lsn)) : this.state.offset
    })
  }
}

/** A live change's own log position (`<lsn>_<op_position>`), when the server says it. */
function messageOffset(message: Message): string | null {
  const { lsn, op_position: position } = message.headers as { lsn?: unknown; op_position?: unknown }
  return typeof lsn === 'string' && typeof position === 'number' ? `${lsn}_${position}` : null
}

function parseSchema(header: string | null): ShapeSchema | null {
  if (!header) return null
  try {
    const parsed = ShapeSchemaSchema.safeParse(JSON.parse(header))
    return parsed.success ? parsed.data : null
  } catch {
    return null
  }
}

function parseJson(text: string, url: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new ShapeStreamError('protocol', `${what} is not JSON: ${text.slice(0, 200)}`, url)
  }
}

/** The body's messages; checked without a copy (isMessageArray), and by the schema only to say what is wrong. */
function parseMessages(text: string, url: string, what: string): Message[] {
  const value = parseJson(text, url, what)
  if (isMessageArray(value)) return value
  const parsed = MessageArraySchema.safeParse(value)
  if (!parsed.success)
    throw new ShapeStreamError(
      'protocol',
      `${what} is not an array of shape messages: ${parsed.error.issues[0]?.message ?? ''}`,
      url
    )
  return parsed.data
}

function parseMessage(text: string, url: string): Message {
  const value = parseJson(text, url, 'an SSE data frame')
  if (isMessage(value)) return value
  const parsed = MessageSchema.safeParse(value)
  if (!parsed.success)
    throw new ShapeStreamError('protocol', `an SSE data frame is not a shape message: ${text.slice(0, 200)}`, url)
  return parsed.data
}
