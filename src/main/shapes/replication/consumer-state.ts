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
  | { readonly phase: 'reconnecting'; readonly attempt: number; readonly error: string; readonly timer: NodeJS.Timeout }
  | { readonly phase: 'stopping'; readonly done: Promise<void> }
  | { readonly phase: 'stopped' }

export const CONSUMER_PHASES = ['idle', 'connecting', 'streaming', 'reconnecting', 'stopping', 'stopped'] as const
export type ConsumerPhase = (typeof CONSUMER_PHASES)[number]

/**
 * The allowed transitions; anything else is refused. `connecting → connecting`: the session is being opened, or a
 * failure reported meanwhile supersedes it. `reconnecting → reconnecting`: a failure reported while the backoff runs
 * (the one timer stays). `stop()` is allowed from every phase before `stopping`.
 */
export const CONSUMER_TRANSITIONS: Readonly<Record<ConsumerPhase, readonly ConsumerPhase[]>> = {
  idle: ['connecting', 'stopping'],
  connecting: ['connecting', 'streaming', 'reconnecting', 'stopping'],
  streaming: ['reconnecting', 'stopping'],
  reconnecting: ['reconnecting', 'connecting', 'stopping'],
  stopping: ['stopped'],
  stopped: []
}

export const canTransition = (from: ConsumerPhase, to: ConsumerPhase): boolean =>
  CONSUMER_TRANSITIONS[from].includes(to)

/** A transition the consumer never makes: a fault in the code, not in Postgres. */
export class ConsumerTransitionError extends Error {
  override readonly name = 'ConsumerTransitionError'
  constructor(
    readonly from: ConsumerPhase,
    readonly to: ConsumerPhase
  ) {
    super(`the replication consumer cannot go from ${from} to ${to}`)
  }
}

export const IDLE: ConsumerState = Object.freeze({ phase: 'idle' })

/** The next state, frozen; throws ConsumerTransitionError when the table refuses it. */
export function transition(state: ConsumerState, next: ConsumerState): ConsumerState {
  if (!canTransition(state.phase, next.phase)) throw new ConsumerTransitionError(state.phase, next.phase)
  return Object.freeze({ ...next })
}

/** The walsender session open now, if any. */
export const sessionOf = (state: ConsumerState): ReplicationSession | null =>
  state.phase === 'streaming' ? state.session : null

/** The generation whose callbacks are current: the session being opened or the one open. */
export const generationOf = (state: ConsumerState): number | null =>
  state.phase === 'connecting' || state.phase === 'streaming' ? state.generation : null

export const isStopping = (state: ConsumerState): boolean => state.phase === 'stopping' || state.phase === 'stopped'
