import { type Step, stepMachine, to, type TransitionTable } from '../../../shared/machine'
import type { ReplicationSession } from './session'

/**
 * Where the replication consumer's connection is. `idle`: constructed. `connecting`: checking the slot and opening a
 * walsender session (`generation` numbers the session being opened, null before it starts or once a failure reported
 * meanwhile superseded it). `streaming`: a session is open. `reconnecting`: waiting out a backoff after `attempt`
 * failures since the last session opened. `stopping`: closing everything; `stopped`: closed for good.
 */
export type ConsumerState =
  | { readonly phase: 'idle' }
  | {
      readonly phase: 'connecting'
      readonly attempt: number
      readonly generation: number | null
      readonly opening: Promise<unknown> | null
    }
  | { readonly phase: 'streaming'; readonly generation: number; readonly session: ReplicationSession }
  | { readonly phase: 'reconnecting'; readonly attempt: number; readonly error: string }
  | { readonly phase: 'stopping'; readonly done: Promise<void> }
  | { readonly phase: 'stopped' }

export type ConsumerPhase = ConsumerState['phase']

export type ConsumerEvent =
  /** The first connection. */
  | { readonly kind: 'connect' }
  /** The session numbered `generation` is being opened. */
  | { readonly kind: 'opening'; readonly generation: number; readonly opening: Promise<unknown> }
  | { readonly kind: 'opened'; readonly generation: number; readonly session: ReplicationSession }
  /** The session failed (or applying its transaction did). */
  | { readonly kind: 'session-failed'; readonly error: string }
  /** Checking the slot or opening the session failed. */
  | { readonly kind: 'connect-failed'; readonly error: string }
  /** The backoff is over. */
  | { readonly kind: 'retry-due' }
  | { readonly kind: 'stop'; readonly done: Promise<void> }
  /** Everything is closed. */
  | { readonly kind: 'closed' }

export type ConsumerEffect =
  | { readonly kind: 'close-session'; readonly session: ReplicationSession }
  /** Wait out the backoff after `attempt` failures, then answer retry-due. */
  | { readonly kind: 'back-off'; readonly attempt: number }
  | { readonly kind: 'cancel-back-off' }
  /** Let the session being opened finish opening (stop: none may outlive it). */
  | { readonly kind: 'await-opening'; readonly opening: Promise<unknown> }
  | { readonly kind: 'log'; readonly line: string }
  | { readonly kind: 'status'; readonly state: 'streaming' | 'reconnecting'; readonly error?: string }

export const IDLE: ConsumerState = Object.freeze({ phase: 'idle' })

type Effect = ConsumerEffect
type Next = Step<ConsumerState, Effect>

const interrupted = (error: string): Effect[] => [
  { kind: 'log', line: `replication interrupted: ${error}` },
  { kind: 'status', state: 'reconnecting', error }
]

const backingOff = (attempt: number, error: string, ...effects: Effect[]): Next =>
  to({ phase: 'reconnecting', attempt, error }, ...effects, { kind: 'back-off', attempt })

const stopping = (done: Promise<void>, ...effects: Effect[]): Next =>
  to<ConsumerState, Effect>({ phase: 'stopping', done }, ...effects)

/** Every transition the consumer makes; anything else is a MachineTransitionError. */
export const CONSUMER_TRANSITIONS: TransitionTable<ConsumerState, ConsumerEvent, Effect> = {
  idle: {
    connect: () => to({ phase: 'connecting', attempt: 0, generation: null, opening: null }),
    stop: (_, { done }) => stopping(done)
  },
  connecting: {
    opening: (state, { generation, opening }) => to({ ...state, generation, opening }),
    // a session opened after a failure superseded it is closed, and the connection backs off (connect-failed)
    opened: (state, { generation, session }) =>
      state.generation === generation
        ? to<ConsumerState, Effect>({ phase: 'streaming', generation, session }, { kind: 'status', state: 'streaming' })
        : to<ConsumerState, Effect>(state, { kind: 'close-session', session }),
    // reported while connecting (the previous session's last transaction could not be applied): a session being
    // opened is superseded; one not opened yet is not affected
    'session-failed': (state, { error }) => to({ ...state, generation: null }, ...interrupted(error)),
    'connect-failed': (state, { error }) =>
      backingOff(
        state.attempt + 1,
        error,
        { kind: 'log', line: `reconnecting failed: ${error}` },
        { kind: 'status', state: 'reconnecting', error }
      ),
    stop: (state, { done }) =>
      state.opening ? stopping(done, { kind: 'await-opening', opening: state.opening }) : stopping(done)
  },
  streaming: {
    'session-failed': (state, { error }) =>
      backingOff(1, error, { kind: 'close-session', session: state.session }, ...interrupted(error)),
    stop: (state, { done }) => stopping(done, { kind: 'close-session', session: state.session })
  },
  reconnecting: {
    // the one timer stays
    'session-failed': (state, { error }) => to({ ...state, error }, ...interrupted(error)),
    'retry-due': (state) => to({ phase: 'connecting', attempt: state.attempt, generation: null, opening: null }),
    stop: (_, { done }) => stopping(done, { kind: 'cancel-back-off' })
  },
  stopping: {
    // late reports of what was under way: nothing follows them
    'session-failed': (state) => to(state),
    'connect-failed': (state) => to(state),
    opened: (state, { session }) => to<ConsumerState, Effect>(state, { kind: 'close-session', session }),
    closed: () => to({ phase: 'stopped' })
  },
  stopped: {
    'session-failed': (state) => to(state),
    'connect-failed': (state) => to(state),
    opened: (state, { session }) => to<ConsumerState, Effect>(state, { kind: 'close-session', session })
  }
}

export const nextConsumerState = (state: ConsumerState, event: ConsumerEvent): Next =>
  stepMachine('the replication consumer', CONSUMER_TRANSITIONS, state, event)

/** The walsender session open now, if any. */
export const sessionOf = (state: ConsumerState): ReplicationSession | null =>
  state.phase === 'streaming' ? state.session : null

/** The generation whose callbacks are current: the session being opened or the one open. */
export const generationOf = (state: ConsumerState): number | null =>
  state.phase === 'connecting' || state.phase === 'streaming' ? state.generation : null

export const isStopping = (state: ConsumerState): boolean => state.phase === 'stopping' || state.phase === 'stopped'
