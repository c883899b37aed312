import type { HeaderBrand } from '../protocol'
import type { ShapeStreamError } from './errors'
import type { Offset } from './offsets'
import type { ShapeSchema } from './protocol-headers'
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

/**
 * The allowed transitions; anything else is refused. A must-refetch sends any following phase back to `syncing`;
 * `stop()` is allowed from every phase but `stopped`, so a stopped stream stays stopped whatever answer comes late.
 */
export const STREAM_TRANSITIONS: Readonly<Record<StreamPhase, readonly StreamPhase[]>> = {
  initial: ['syncing', 'stopped'],
  syncing: ['syncing', 'live', 'retrying', 'up-to-date', 'stopped', 'failed'],
  live: ['live', 'sse-fallback', 'syncing', 'retrying', 'stopped', 'failed'],
  'sse-fallback': ['sse-fallback', 'syncing', 'retrying', 'stopped', 'failed'],
  retrying: ['retrying', 'syncing', 'live', 'sse-fallback', 'stopped', 'failed'],
  'up-to-date': ['stopped'],
  stopped: [],
  failed: ['stopped']
}

export const canTransition = (from: StreamPhase, to: StreamPhase): boolean => STREAM_TRANSITIONS[from].includes(to)

export class StreamTransitionError extends Error {
  override readonly name = 'StreamTransitionError'
  constructor(
    readonly from: StreamPhase,
    readonly to: StreamPhase
  ) {
    super(`the shape stream cannot go from ${from} to ${to}`)
  }
}

/** A stream's state: replaced, never changed, on every step (listeners may keep the one they were given). */
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

export const initialStreamState = (fields: StreamFields): ShapeStreamState =>
  Object.freeze({ phase: 'initial', ...fields })

/** The state after moving to `phase` (with changed fields); throws StreamTransitionError when the table refuses it. */
export function transition(
  state: ShapeStreamState,
  phase: StreamPhase,
  fields: Partial<StreamFields> = {}
): ShapeStreamState {
  if (!canTransition(state.phase, phase)) throw new StreamTransitionError(state.phase, phase)
  return Object.freeze({ ...state, ...fields, phase })
}

/** The same phase with changed fields (what a response, a restart or a fallback records). */
export const withFields = (state: ShapeStreamState, fields: Partial<StreamFields>): ShapeStreamState =>
  Object.freeze({ ...state, ...fields })

/** The phase of a stream about to send a request in `live` mode (`off`: catching up). */
export const requestPhase = (live: LiveMode, sseFellBack: boolean): StreamPhase =>
  live === 'off' ? 'syncing' : sseFellBack ? 'sse-fallback' : 'live'
