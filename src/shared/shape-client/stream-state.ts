import { type Step, stepMachine, to, type TransitionTable } from '../machine'
import { CONTROL, offsetAfterLsn, OFFSET_START, type HeaderBrand } from '../protocol'
import type { ShapeStreamError } from './errors'
import { isMustRefetch, isUpToDate, type ControlMessage, type Message } from './messages'
import { laterOffset, type Offset } from './offsets'
import { ShapeSchemaSchema, type ProtocolHeaders, type ShapeSchema } from './protocol-headers'
import type { LiveMode } from './recorder'

/**
 * Where a stream is. `initial`: not started. `syncing`: catching up (non-live requests). `live`: following the log
 * (long-poll or SSE). `sse-fallback`: following it by long-polling because SSE connections kept closing at once.
 * `retrying`: waiting out a backoff. `up-to-date`: done (live `off`). `stopped`: stopped by its owner. `failed`: gave up.
 */
export const STREAM_PHASES = [
  'initial',
  'syncing',
  'live',
  'sse-fallback',
  'retrying',
  'up-to-date',
  'stopped',
  'failed'
] as const
export type StreamPhase = (typeof STREAM_PHASES)[number]

/** A stream's state as its listeners see it: replaced, never changed, on every step (they may keep the one given). */
export interface ShapeStreamState {
  readonly phase: StreamPhase
  readonly brand: HeaderBrand | null
  readonly handle: string | null
  readonly offset: Offset
  readonly cursor: string | null
  readonly schema: ShapeSchema | null
  /** Whether the last response reached the end of the log. */
  readonly upToDate: boolean
  /** The live mode actually in use: `long-poll` after an SSE fallback. */
  readonly liveMode: LiveMode
  readonly sseFellBack: boolean
  readonly error: ShapeStreamError | null
}

export type StreamFields = Omit<ShapeStreamState, 'phase'>

/** The machine's state: the stream's, and what its decisions count. */
export interface StreamMachineState {
  readonly phase: StreamPhase
  readonly stream: ShapeStreamState
  /** Server and network errors in a row (the backoff's attempt). */
  readonly failures: number
  /** Retries onError asked for in a row. */
  readonly onErrorRetries: number
  /** SSE connections in a row that closed at once. */
  readonly shortSse: number
  /** Sent with the requests after a must-refetch until a response came, so no cache answers them. */
  readonly cacheBuster: string | null
}

/** What one request came back with. */
export type Answer =
  | { kind: 'messages'; messages: Message[]; headers: ProtocolHeaders; requestId: number }
  | { kind: 'sse-ended'; durationMs: number; deliveredChanges: boolean }
  | { kind: 'must-refetch'; handle: string | null; messages: Message[]; requestId: number; cacheBuster: string }
  | { kind: 'http-error'; error: ShapeStreamError; retryAfter: string | null }

export type StreamEvent =
  | { readonly kind: 'start' }
  /** Go on: the next request, or done. */
  | { readonly kind: 'continue' }
  | { readonly kind: 'answered'; readonly answer: Answer }
  /** A backoff or a pause before reconnecting SSE is over. */
  | { readonly kind: 'waited' }
  /** onError answered: retry (with the headers/params it gave, merged), or stop the stream with the error. */
  | { readonly kind: 'on-error-answered'; readonly retry: boolean; readonly error: ShapeStreamError }
  /** An SSE response's headers; then each up-to-date of its stream (with the messages since the last). */
  | { readonly kind: 'sse-opened'; readonly headers: ProtocolHeaders }
  | { readonly kind: 'sse-caught-up'; readonly upToDate: Message; readonly messages: Message[]; requestId: number }
  /** A subset request met a 409: the shape is fetched again (the request in flight is abandoned). */
  | { readonly kind: 'refetch'; readonly answer: Extract<Answer, { kind: 'must-refetch' }> }
  | { readonly kind: 'stop' }
  | { readonly kind: 'failed'; readonly error: ShapeStreamError }

export type StreamEffect =
  /** Send the next request in this live mode; answer with `answered`. */
  | { readonly kind: 'request'; readonly live: LiveMode }
  | { readonly kind: 'publish'; readonly messages: Message[]; readonly requestId: number }
  /** A must-refetch batch, past the subset filter: listeners drop what they have. */
  | { readonly kind: 'deliver'; readonly messages: Message[]; readonly requestId: number }
  /** Abandon the request in flight and every subset's filter: the shape starts again. */
  | { readonly kind: 'restart' }
  /** Wait out the backoff after `attempt` failures (at least Retry-After); answer with `waited`. */
  | {
      readonly kind: 'back-off'
      readonly attempt: number
      readonly error: ShapeStreamError
      readonly retryAfter: string | null
      readonly announce: boolean
    }
  /** A jittered pause before reconnecting SSE after `closed` short connections; answer with `waited`. */
  | { readonly kind: 'sse-pause'; readonly closed: number; readonly durationMs: number }
  /** Ask onError; answer with `on-error-answered`. */
  | { readonly kind: 'ask-on-error'; readonly error: ShapeStreamError }
  | { readonly kind: 'note'; readonly level: 'info' | 'warn' | 'error'; readonly text: string }
  /** Answer with `continue`. */
  | { readonly kind: 'continue' }

export interface StreamMachineConfig {
  /** The live mode asked for (a must-refetch goes back to it). */
  live: LiveMode
  sseMinConnectionMs: number
  sseFallbackAfter: number
  maxOnErrorRetries: number
}

type Machine = StreamMachineState
type Next = Step<Machine, StreamEffect>
type Effect = StreamEffect

const go = (machine: Machine, ...effects: Effect[]): Next => to(machine, ...effects)

export const initialStreamState = (fields: StreamFields): Machine => {
  const stream: ShapeStreamState = Object.freeze({ phase: 'initial', ...fields })
  return Object.freeze({ phase: 'initial', stream, failures: 0, onErrorRetries: 0, shortSse: 0, cacheBuster: null })
}

/** The machine in `phase` with the stream's fields changed (a new stream state, which its listeners are given). */
const at = (machine: Machine, phase: StreamPhase, fields: Partial<StreamFields> = {}, counts: Partial<Machine> = {}) =>
  ({ ...machine, ...counts, phase, stream: Object.freeze({ ...machine.stream, ...fields, phase }) }) as Machine

/** The phase of a stream about to send a request in `live` mode (`off`: catching up). */
export const requestPhase = (live: LiveMode, sseFellBack: boolean): StreamPhase =>
  live === 'off' ? 'syncing' : sseFellBack ? 'sse-fallback' : 'live'

/** The next request (catching up until up to date, then live), or done when live is `off`. */
function nextRequest(machine: Machine): Next {
  const { upToDate, liveMode, sseFellBack } = machine.stream
  const live: LiveMode | null = !upToDate ? 'off' : liveMode === 'off' ? null : liveMode
  if (live === null) return go(at(machine, 'up-to-date'))
  return go(at(machine, requestPhase(live, sseFellBack)), { kind: 'request', live })
}

const failed = (machine: Machine, error: ShapeStreamError): Next =>
  go(at(machine, 'failed', { error }), { kind: 'note', level: 'error', text: `stream failed: ${error.message}` })

const GO_ON: Effect = { kind: 'continue' }

/** A must-refetch: everything from -1 again, with a cache-buster, in the live mode asked for. */
function refetched(machine: Machine, config: StreamMachineConfig, answer: Extract<Answer, { kind: 'must-refetch' }>) {
  const { handle, messages, requestId, cacheBuster } = answer
  const fields = { handle, offset: OFFSET_START, cursor: null, schema: null, upToDate: false, sseFellBack: false }
  const refetch: ControlMessage = { headers: { control: CONTROL.mustRefetch } }
  const text = `must-refetch: discarding the shape and syncing again from -1${handle ? ` with handle ${handle}` : ''}`
  return {
    machine: at(machine, machine.phase, { ...fields, liveMode: config.live }, { cacheBuster, shortSse: 0 }),
    effects: [
      { kind: 'note', level: 'warn', text },
      { kind: 'restart' },
      { kind: 'deliver', messages: messages.some(isMustRefetch) ? messages : [refetch], requestId }
    ] satisfies Effect[]
  }
}

function answered(machine: Machine, config: StreamMachineConfig, answer: Answer): Next {
  if (answer.kind === 'http-error') return httpError(machine, config, answer)
  const settled = { ...machine, failures: 0, onErrorRetries: 0 }
  if (answer.kind === 'must-refetch') {
    const restart = refetched(settled, config, answer)
    return go(restart.machine, ...restart.effects, GO_ON)
  }
  if (answer.kind === 'sse-ended') return sseEnded(settled, config, answer)
  const { headers, messages, requestId } = answer
  const { stream } = settled
  const advanced = at(
    settled,
    settled.phase,
    {
      brand: headers.brand,
      handle: headers.handle,
      offset: headers.offset ?? stream.offset,
      cursor: headers.cursor ?? stream.cursor,
      schema: stream.schema ?? parseSchema(headers.schema),
      upToDate: stream.upToDate || messages.some(isUpToDate)
    },
    { cacheBuster: null }
  )
  return go(advanced, ...(messages.length > 0 ? [{ kind: 'publish', messages, requestId } as const] : []), GO_ON)
}

/** 5xx, 429 and network errors are retried without end; other errors go to onError (a limited number of times). */
function httpError(
  machine: Machine,
  config: StreamMachineConfig,
  { error, retryAfter }: Answer & { kind: 'http-error' }
) {
  if (error.kind === 'server' || error.kind === 'network') {
    const attempt = machine.failures
    return go(at(machine, 'retrying', {}, { failures: attempt + 1 }), {
      kind: 'back-off',
      attempt,
      error,
      retryAfter,
      announce: true
    } satisfies Effect)
  }
  const onErrorRetries = machine.onErrorRetries + 1
  if (onErrorRetries > config.maxOnErrorRetries) return failed(machine, error)
  return go({ ...machine, onErrorRetries }, { kind: 'ask-on-error', error } satisfies Effect)
}

/** An SSE response ended: reconnect, after a pause when it closed at once, or fall back to long-polls. */
function sseEnded(machine: Machine, config: StreamMachineConfig, answer: Answer & { kind: 'sse-ended' }): Next {
  if (answer.durationMs >= config.sseMinConnectionMs || answer.deliveredChanges)
    return go({ ...machine, shortSse: 0 }, GO_ON)
  const shortSse = machine.shortSse + 1
  if (shortSse >= config.sseFallbackAfter) {
    const text = `SSE connections closed immediately ${config.sseFallbackAfter} times in a row: a proxy in the path is probably buffering responses. Falling back to long-polling.`
    return go(
      at(machine, machine.phase, { liveMode: 'long-poll', sseFellBack: true }, { shortSse }),
      {
        kind: 'note',
        level: 'warn',
        text
      } satisfies Effect,
      GO_ON
    )
  }
  return go({ ...machine, shortSse }, { kind: 'sse-pause', closed: shortSse, durationMs: answer.durationMs })
}

/** SSE responses keep their headers for the whole stream: the resume point comes from each up-to-date's LSN. */
function sseCaughtUp(machine: Machine, upToDate: Message): Machine {
  const lsn = 'control' in upToDate.headers ? upToDate.headers.global_last_seen_lsn : undefined
  const { offset } = machine.stream
  return at(machine, machine.phase, {
    upToDate: true,
    offset: typeof lsn === 'string' ? laterOffset(offset, offsetAfterLsn(lsn)) : offset
  })
}

/** Every event the stream takes, per phase, for a stream's configuration; anything else is a fault in the client. */
export function streamTransitions(config: StreamMachineConfig): TransitionTable<Machine, StreamEvent, Effect> {
  const stop = (machine: Machine): Next => go(at(machine, 'stopped'))
  const refetch = (machine: Machine, { answer }: { answer: Extract<Answer, { kind: 'must-refetch' }> }): Next => {
    const restart = refetched(machine, config, answer)
    return go(restart.machine, ...restart.effects)
  }
  const requesting = {
    continue: nextRequest,
    answered: (machine: Machine, { answer }: { answer: Answer }) => answered(machine, config, answer),
    'on-error-answered': (machine: Machine, { retry, error }: { retry: boolean; error: ShapeStreamError }) =>
      retry
        ? go(at(machine, 'retrying'), {
            kind: 'back-off',
            attempt: machine.onErrorRetries - 1,
            error,
            retryAfter: null,
            announce: false
          } satisfies Effect)
        : failed(machine, error),
    'sse-opened': (machine: Machine, { headers }: { headers: ProtocolHeaders }) =>
      go(
        at(machine, machine.phase, {
          brand: headers.brand,
          handle: headers.handle,
          offset: laterOffset(headers.offset ?? machine.stream.offset, machine.stream.offset),
          cursor: headers.cursor
        })
      ),
    'sse-caught-up': (
      machine: Machine,
      { upToDate, messages, requestId }: Extract<StreamEvent, { kind: 'sse-caught-up' }>
    ) => go(sseCaughtUp(machine, upToDate), { kind: 'publish', messages, requestId } satisfies Effect),
    waited: nextRequest,
    refetch,
    stop,
    failed: (machine: Machine, { error }: { error: ShapeStreamError }) => failed(machine, error)
  }
  return {
    initial: { start: nextRequest, refetch, stop },
    syncing: requesting,
    live: requesting,
    'sse-fallback': requesting,
    retrying: requesting,
    'up-to-date': { refetch, stop },
    // a stopped stream stays stopped whatever answer comes late
    stopped: { refetch: (machine) => go(machine) },
    failed: { refetch, stop }
  }
}

export const nextStreamState = (
  table: TransitionTable<Machine, StreamEvent, Effect>,
  machine: Machine,
  event: StreamEvent
): Next => stepMachine('the shape stream', table, machine, event)

function parseSchema(header: string | null): ShapeSchema | null {
  if (!header) return null
  try {
    const parsed = ShapeSchemaSchema.safeParse(JSON.parse(header))
    return parsed.success ? parsed.data : null
  } catch {
    return null
  }
}
