import { type Step, stepMachine, to, type TransitionTable } from '../../../shared/machine'

/**
 * The collector's group commit. `idle`: no flush runs. `flushing`: one runs; `again` when more was applied meanwhile,
 * which the next flush, started as soon as this one ends, makes durable. `retry`: a flush failed and a timer will ask
 * for another (a flush asked for meanwhile still runs at once). `failure`: why the last flush failed, until one
 * succeeds. `stopped`: the collector stopped; a flush still running ends, nothing follows it.
 */
export type FlushState =
  | { readonly phase: 'idle'; readonly retry: boolean; readonly failure: string | null }
  | { readonly phase: 'flushing'; readonly again: boolean; readonly retry: boolean; readonly failure: string | null }
  | { readonly phase: 'stopped'; readonly failure: string | null }

export type FlushEvent =
  /** Logs grew or a commit was applied: make them durable. */
  | { readonly kind: 'requested' }
  | { readonly kind: 'succeeded' }
  /** `message`: the failure as the log states it. */
  | { readonly kind: 'failed'; readonly message: string }
  /** The retry timer fired. */
  | { readonly kind: 'retry-due' }
  | { readonly kind: 'stop' }

export type FlushEffect =
  /** Sync the grown logs, then state.json, then report the recorded commit durable; answer succeeded or failed. */
  | { readonly kind: 'flush' }
  /** Answer retry-due after a pause. */
  | { readonly kind: 'retry-later' }
  | { readonly kind: 'cancel-retry' }
  | { readonly kind: 'log'; readonly line: string }

export const FLUSH_IDLE: FlushState = Object.freeze({ phase: 'idle', retry: false, failure: null })

type Running = Exclude<FlushState, { phase: 'stopped' }>
type Flush = Step<FlushState, FlushEffect>

const start = (state: Running): Flush =>
  to({ phase: 'flushing', again: false, retry: state.retry, failure: state.failure }, { kind: 'flush' })

/** The flush ended: the next one at once when more was asked for meanwhile. */
const ended = (state: Extract<FlushState, { phase: 'flushing' }>, retry: boolean, failure: string | null): Flush =>
  state.again
    ? to({ phase: 'flushing', again: false, retry, failure }, { kind: 'flush' })
    : to({ phase: 'idle', retry, failure })

const stopped = (state: Running): Flush =>
  state.retry
    ? to({ phase: 'stopped', failure: state.failure }, { kind: 'cancel-retry' })
    : to({ phase: 'stopped', failure: state.failure })

export const FLUSH_TRANSITIONS: TransitionTable<FlushState, FlushEvent, FlushEffect> = {
  idle: {
    requested: start,
    'retry-due': (state) => start({ ...state, retry: false }),
    stop: stopped
  },
  flushing: {
    requested: (state) => to({ ...state, again: true }),
    'retry-due': (state) => to({ ...state, again: true, retry: false }),
    succeeded: (state) => ended(state, state.retry, null),
    failed: (state, { message }) => {
      const next = ended(state, true, message)
      const effects: FlushEffect[] = message === state.failure ? [] : [logLine(message)]
      if (!state.retry) effects.push({ kind: 'retry-later' })
      return { ...next, effects: [...effects, ...next.effects] }
    },
    stop: stopped
  },
  stopped: {
    requested: (state) => to(state),
    'retry-due': (state) => to(state),
    succeeded: (state) => to(state),
    failed: (state) => to(state),
    stop: (state) => to(state)
  }
}

const logLine = (line: string): FlushEffect => ({ kind: 'log', line })

export const nextFlushState = (state: FlushState, event: FlushEvent): Flush =>
  stepMachine('the collector’s flush', FLUSH_TRANSITIONS, state, event)

/** Why the logs cannot be made durable; null when the last flush succeeded. */
export const flushFailureOf = (state: FlushState): string | null => state.failure
