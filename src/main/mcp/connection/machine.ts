import type { McpToolError } from '../../../shared/contract/mcp'

/**
 * One MCP server's connection, as an immutable state. `idle`: no link; the next use opens one. `connecting`: one
 * attempt in flight (a restart's backoff included); every use waits for it. `connected`: a live link. `needs-login`:
 * the grant needs a person first (no tokens, or a 401 the auth layer could not recover from). `failed`: the last
 * attempt failed; the next use tries again. `crash-loop`: a stdio server crashed too often within the window; nothing
 * starts it until a reconnect. `closed`: the entry is gone. A state never changes: each event gives a new one (or the
 * same one when nothing changes), with the effects the connection acts on.
 */
export type ConnectionState =
  | ({ readonly phase: 'idle' } & Counters)
  | ({ readonly phase: 'connecting' } & Counters)
  | ({ readonly phase: 'connected' } & Counters)
  | ({ readonly phase: 'needs-login' } & Counters)
  | ({ readonly phase: 'failed'; readonly error: McpToolError } & Counters)
  | ({ readonly phase: 'crash-loop'; readonly error: McpToolError } & Counters)
  | ({ readonly phase: 'closed' } & Counters)

export type ConnectionPhase = ConnectionState['phase']

/** What a connection is for: fixed over its life, carried by each of its states. */
export interface ConnectionSpec {
  readonly name: string
  /** The stdio server's command line, named by its crash messages; null over HTTP. */
  readonly command: string | null
  readonly policy: RestartPolicy
}

interface Counters {
  readonly spec: ConnectionSpec
  /** Restarts after a crash, over the connection's life (a reconnect does not reset them). */
  readonly restarts: number
  /** When the server crashed (ms since the epoch), those within the policy's window. */
  readonly crashes: readonly number[]
}

export interface RestartPolicy {
  /** Delay before the first restart; doubled for each further crash in the window. */
  baseDelayMs: number
  maxDelayMs: number
  /** This many crashes within `windowMs` make a crash loop: the entry stays in error until reconnected. */
  maxCrashes: number
  windowMs: number
}

export const DEFAULT_RESTART: RestartPolicy = { baseDelayMs: 250, maxDelayMs: 5_000, maxCrashes: 5, windowMs: 60_000 }

export type ConnectionEvent =
  /** A request needs the client. `loginReady`: false where the grant needs a person first (no tokens yet). */
  | { readonly kind: 'use'; readonly loginReady: boolean }
  /** Another host is bridged to the server (`syncscope mcp run`): it needs tokens as a use does. */
  | { readonly kind: 'bridge'; readonly loginReady: boolean }
  /** The attempt's `initialize` was answered. */
  | { readonly kind: 'opened' }
  /** The attempt met a 401 the auth layer could not recover from. */
  | { readonly kind: 'login-needed' }
  /** The attempt failed without a crash: a cwd that is not there, a timeout, an HTTP error. */
  | { readonly kind: 'open-failed'; readonly error: McpToolError }
  /** The stdio server could not start, or its live process exited: counted toward a crash loop. */
  | { readonly kind: 'crashed'; readonly at: number; readonly message: string; readonly stderr: readonly string[] }
  /** The server closed a live HTTP link. */
  | { readonly kind: 'dropped' }
  /** A reconnect: the live link goes, the crash count is forgotten. */
  | { readonly kind: 'reset' }
  | { readonly kind: 'close' }

export type ConnectionEffect =
  /** Start an attempt after `delayMs` (a restart's backoff; 0 at once). */
  | { readonly kind: 'open'; readonly delayMs: number }
  /** The request waits for the attempt in flight. */
  | { readonly kind: 'join' }
  /** The request gets the live client. */
  | { readonly kind: 'hand-out' }
  /** The request (or the bridge) fails with this. */
  | { readonly kind: 'refuse'; readonly error: McpToolError }
  /** The attempt's client becomes the live one. */
  | { readonly kind: 'adopt' }
  /** The attempt's client is closed unused (the connection closed meanwhile). */
  | { readonly kind: 'discard' }
  /** The live client is closed (its process group ended). */
  | { readonly kind: 'close-link' }
  /** The client whose `initialize` is in flight is closed, so the attempt fails at once. */
  | { readonly kind: 'abort-open' }

export interface ConnectionStep {
  readonly state: ConnectionState
  readonly effects: readonly ConnectionEffect[]
}

/** A transition the connection never makes: a fault in the code, not in the server. */
export class ConnectionTransitionError extends Error {
  override readonly name = 'ConnectionTransitionError'
  constructor(phase: ConnectionPhase, event: ConnectionEvent['kind']) {
    super(`an MCP connection cannot go from ${phase} on ${event}`)
  }
}

export function initialConnection(spec: ConnectionSpec): ConnectionState {
  return { phase: 'idle', spec, restarts: 0, crashes: [] }
}

export function needsLoginError(name: string): McpToolError {
  return {
    code: 'needs_login',
    message: `${name} needs a login: use "Log in" on the MCP page or run \`syncscope mcp login ${name}\``
  }
}

const CLOSED: McpToolError = { code: 'transport_error', message: 'the connection is closed' }

type Transition<K extends ConnectionEvent['kind'], P extends ConnectionPhase = ConnectionPhase> = (
  state: Extract<ConnectionState, { phase: P }>,
  event: Extract<ConnectionEvent, { kind: K }>
) => ConnectionStep

type Table = { [P in ConnectionPhase]: { [K in ConnectionEvent['kind']]?: Transition<K, P> } }

/** A transition that serves in any phase. */
type Shared<K extends ConnectionEvent['kind']> = (
  state: ConnectionState,
  event: Extract<ConnectionEvent, { kind: K }>
) => ConnectionStep

const step = (state: ConnectionState, ...effects: ConnectionEffect[]): ConnectionStep => ({ state, effects })
const counters = ({ spec, restarts, crashes }: ConnectionState): Counters => ({ spec, restarts, crashes })
type Quiet = Exclude<ConnectionPhase, 'failed' | 'crash-loop'>
const to = (state: ConnectionState, phase: Quiet): ConnectionState => ({ phase, ...counters(state) }) as ConnectionState

/** A use where no attempt is in flight: one starts, unless the grant needs a person first. */
const attempt: Shared<'use'> = (state, { loginReady }) =>
  loginReady
    ? step(to(state, 'connecting'), { kind: 'open', delayMs: 0 })
    : step(to(state, 'needs-login'), { kind: 'refuse', error: needsLoginError(state.spec.name) })

/** Without tokens a bridge is refused; where no attempt is in flight, the entry shows it needs a login. */
const bridge: Shared<'bridge'> = (state, { loginReady }) => {
  if (loginReady) return step(state)
  const refuse = { kind: 'refuse', error: needsLoginError(state.spec.name) } as const
  return step(state.phase === 'connecting' || state.phase === 'connected' ? state : to(state, 'needs-login'), refuse)
}

/** A crash counted in the policy's window: a crash loop past `maxCrashes`, else the error it is. */
function counted(state: ConnectionState, { at, message, stderr }: Extract<ConnectionEvent, { kind: 'crashed' }>) {
  const { policy } = state.spec
  const crashes = [...state.crashes.filter((crash) => at - crash < policy.windowMs), at]
  const loop = crashes.length >= policy.maxCrashes
  const error: McpToolError = loop
    ? {
        code: 'crash_loop',
        message: `\`${state.spec.command}\` crashed ${crashes.length} times within ${policy.windowMs / 1000} s; reconnect to try again (last: ${message})`,
        stderr: [...stderr]
      }
    : { code: 'transport_error', message, stderr: [...stderr] }
  return { crashes, loop, error }
}

/** The attempt could not start the server: the callers get the error; nothing restarts it by itself. */
const startCrashed: Shared<'crashed'> = (state, event) => {
  const { crashes, loop, error } = counted(state, event)
  return step({ ...counters(state), crashes, phase: loop ? 'crash-loop' : 'failed', error })
}

/** The live process exited: restarted after a backoff that doubles with each crash in the window, or a crash loop. */
const exited: Shared<'crashed'> = (state, event) => {
  const { crashes, loop, error } = counted(state, event)
  if (loop) return step({ ...counters(state), crashes, phase: 'crash-loop', error })
  const { baseDelayMs, maxDelayMs } = state.spec.policy
  const delayMs = Math.min(baseDelayMs * 2 ** (crashes.length - 1), maxDelayMs)
  return step(
    { ...counters(state), crashes, restarts: state.restarts + 1, phase: 'connecting' },
    { kind: 'open', delayMs }
  )
}

const failed: Shared<'open-failed'> = (state, { error }) => step({ ...counters(state), phase: 'failed', error })
const reset: Shared<'reset'> = (state) => step({ ...to(state, 'idle'), crashes: [] })
const close: Shared<'close'> = (state) => step(to(state, 'closed'))
const same = (state: ConnectionState): ConnectionStep => step(state)
const refuseClosed = (state: ConnectionState): ConnectionStep => step(state, { kind: 'refuse', error: CLOSED })

/** Every allowed transition; a missing entry is a ConnectionTransitionError. */
export const CONNECTION_TRANSITIONS: Table = {
  idle: { use: attempt, bridge, reset, close },
  connecting: {
    use: (state) => step(state, { kind: 'join' }),
    bridge,
    opened: (state) => step(to(state, 'connected'), { kind: 'adopt' }),
    'login-needed': (state) => step(to(state, 'needs-login')),
    'open-failed': failed,
    crashed: startCrashed,
    // the attempt in flight goes on: the next use waits for it
    reset: (state) => step({ ...state, crashes: [] }),
    close: (state) => step(to(state, 'closed'), { kind: 'abort-open' })
  },
  connected: {
    use: (state) => step(state, { kind: 'hand-out' }),
    bridge,
    crashed: exited,
    dropped: (state) => step(to(state, 'idle')),
    reset: (state) => step({ ...to(state, 'idle'), crashes: [] }, { kind: 'close-link' }),
    close: (state) => step(to(state, 'closed'), { kind: 'close-link' })
  },
  'needs-login': { use: attempt, bridge, reset, close },
  failed: { use: attempt, bridge, reset, close },
  'crash-loop': {
    use: (state) => step(state, { kind: 'refuse', error: state.error }),
    bridge,
    reset,
    close
  },
  // what an attempt still reports after the close changes nothing; its client is closed unused
  closed: {
    use: refuseClosed,
    bridge: refuseClosed,
    opened: (state) => step(state, { kind: 'discard' }),
    'login-needed': same,
    'open-failed': same,
    crashed: same,
    dropped: same,
    reset: same,
    close: same
  }
}

export function nextConnection(state: ConnectionState, event: ConnectionEvent): ConnectionStep {
  const transition = (
    CONNECTION_TRANSITIONS[state.phase] as Record<string, Transition<ConnectionEvent['kind']> | undefined>
  )[event.kind]
  if (!transition) throw new ConnectionTransitionError(state.phase, event.kind)
  return transition(state, event as never)
}

/** The entry's state as the contract names it. */
export function entryStateOf(state: ConnectionState): 'idle' | 'connecting' | 'connected' | 'needs-login' | 'error' {
  switch (state.phase) {
    case 'failed':
    case 'crash-loop':
      return 'error'
    case 'closed':
      return 'idle'
    default:
      return state.phase
  }
}

export const connectionError = (state: ConnectionState): McpToolError | null =>
  state.phase === 'failed' || state.phase === 'crash-loop' ? state.error : null
