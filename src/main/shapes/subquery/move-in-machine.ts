import type { MoveInRead } from './move-in-read'
import type { Move } from './moves'
import type { Fetch } from './views'

/** Rows to fetch for a nested dependency (see Views.apply), with the transaction that moved its subquery. */
export type PendingFetch = Fetch & { xid: number }

/** What one move-in brings in: the moves of its dependencies' values, and rows of nested dependencies to fetch. */
export interface MoveIn {
  readonly moves: readonly Move[]
  readonly fetches: readonly PendingFetch[]
}

/** Transactions held during one move-in before the shape is given up (the reference's buffer limit). */
export const MAX_HELD_TRANSACTIONS = 1000

/**
 * Where a subquery shape is between its transactions and its log, as an immutable state (notes, "Buffering").
 * `loading`: its views are read from its snapshot; transactions wait. `live`: each transaction taken is processed at
 * once. `querying`: a move-in's query runs; the shape's transactions wait, and its log holds nothing past `heldSince`.
 * `read`: the query answered; its block is spliced once the stream has passed the WAL position it read. `closed`: the
 * shape is gone or failed (its clients refetch); it keeps the state it came from, as the registry last saw it.
 */
export type MoveInState =
  | { readonly phase: 'loading' }
  | { readonly phase: 'live' }
  | { readonly phase: 'querying'; readonly moveIn: MoveIn; readonly heldSince: bigint }
  | { readonly phase: 'read'; readonly moveIn: MoveIn; readonly read: MoveInRead; readonly heldSince: bigint }
  | { readonly phase: 'closed'; readonly from: Open }

type Open = Exclude<MoveInState, { phase: 'closed' }>

export type MoveInPhase = MoveInState['phase']

export type MoveInEvent =
  /** The views were read from the shape's snapshot. */
  | { readonly kind: 'loaded' }
  /** A transaction was taken; `waiting` are now taken and not processed, `position` is the stream's. */
  | { readonly kind: 'taken'; readonly waiting: number; readonly position: bigint }
  /** A transaction ending at `lsn` was processed: the moves that bring rows in and the nested rows to fetch. */
  | { readonly kind: 'processed'; readonly moveIn: MoveIn; readonly lsn: bigint }
  /** The move-in's query answered; `position` is the stream's. */
  | { readonly kind: 'read'; readonly read: MoveInRead; readonly position: bigint }
  /** Every transaction ending at or before `position` has been handed over. */
  | { readonly kind: 'stream-moved'; readonly position: bigint }
  /** The move-in's block is written, after the transactions it saw; what those moved in turn is `later`. */
  | { readonly kind: 'spliced'; readonly later: MoveIn }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'close' }

export type MoveInEffect =
  /** Process the transactions waiting, in order, while the shape is live. */
  | { readonly kind: 'process' }
  /** Run the move-in's query (see readMoveIn). */
  | { readonly kind: 'query'; readonly moveIn: MoveIn }
  /** Write the move-in's block, after the waiting transactions its query saw. */
  | { readonly kind: 'splice'; readonly moveIn: MoveIn; readonly read: MoveInRead }
  /** Append what waits to the log; `holdEnded`: nothing is held any more, even when nothing was written. */
  | { readonly kind: 'write-out'; readonly holdEnded: boolean }
  /** Whether the shape is routed by its index, or holds transactions, changed. */
  | { readonly kind: 'routing-changed' }
  /** Forget what waits. */
  | { readonly kind: 'drop' }
  /** The shape cannot go on: its clients refetch. */
  | { readonly kind: 'fail'; readonly error: Error }

export interface MoveInStep {
  readonly state: MoveInState
  readonly effects: readonly MoveInEffect[]
}

/** A transition the subquery runtime never makes: a fault in the code, not in the data. */
export class MoveInTransitionError extends Error {
  override readonly name = 'MoveInTransitionError'
  constructor(phase: MoveInPhase, event: MoveInEvent['kind']) {
    super(`a subquery shape's move-in cannot go from ${phase} on ${event}`)
  }
}

export const LOADING: MoveInState = { phase: 'loading' }

type Transition<P extends MoveInPhase, K extends MoveInEvent['kind']> = (
  state: Extract<MoveInState, { phase: P }>,
  event: Extract<MoveInEvent, { kind: K }>
) => MoveInStep

type Table = { [P in MoveInPhase]: { [K in MoveInEvent['kind']]?: Transition<P, K> } }

const stay = (state: MoveInState, ...effects: MoveInEffect[]): MoveInStep => ({ state, effects })
const failed = (from: Open, error: Error): MoveInStep => ({
  state: { phase: 'closed', from },
  effects: [{ kind: 'drop' }, { kind: 'fail', error }]
})
const closed = (from: Open): MoveInStep => ({ state: { phase: 'closed', from }, effects: [{ kind: 'drop' }] })
const empty = (moveIn: MoveIn): boolean => moveIn.moves.length === 0 && moveIn.fetches.length === 0

const querying = (moveIn: MoveIn, heldSince: bigint): MoveInStep => ({
  state: { phase: 'querying', moveIn, heldSince },
  effects: [{ kind: 'routing-changed' }, { kind: 'query', moveIn }]
})

/** While a move-in is pending: too many transactions waiting give the shape up; else it is spliced once it can be. */
const held = (state: Extract<MoveInState, { phase: 'querying' | 'read' }>, waiting: number, position: bigint) =>
  waiting > MAX_HELD_TRANSACTIONS
    ? failed(state, new Error(`more than ${MAX_HELD_TRANSACTIONS} transactions arrived while a move-in was pending`))
    : spliceable(state, position)

/** A read move-in is written once the stream has passed the WAL position its query read. */
const spliceable = (state: Extract<MoveInState, { phase: 'querying' | 'read' }>, position: bigint): MoveInStep =>
  state.phase === 'read' && position >= state.read.lsn
    ? stay(state, { kind: 'splice', moveIn: state.moveIn, read: state.read })
    : stay(state)

/** Every allowed transition; a missing entry is a MoveInTransitionError. */
export const MOVE_IN_TRANSITIONS: Table = {
  loading: {
    loaded: () => stay({ phase: 'live' }, { kind: 'routing-changed' }, { kind: 'process' }),
    taken: (state) => stay(state),
    'stream-moved': (state) => stay(state),
    failed: (state, { error }) => failed(state, error),
    close: (state) => closed(state)
  },
  live: {
    taken: (state) => stay(state, { kind: 'process' }),
    processed: (state, { moveIn, lsn }) =>
      empty(moveIn) ? stay(state, { kind: 'write-out', holdEnded: false }) : querying(moveIn, lsn),
    'stream-moved': (state) => stay(state),
    failed: (state, { error }) => failed(state, error),
    close: (state) => closed(state)
  },
  querying: {
    taken: (state, { waiting, position }) => held(state, waiting, position),
    read: (state, { read, position }) =>
      spliceable({ phase: 'read', moveIn: state.moveIn, read, heldSince: state.heldSince }, position),
    'stream-moved': (state) => stay(state),
    failed: (state, { error }) => failed(state, error),
    close: (state) => closed(state)
  },
  read: {
    taken: (state, { waiting, position }) => held(state, waiting, position),
    'stream-moved': (state, { position }) => spliceable(state, position),
    // the move-ins of the transactions it saw follow in one of their own; the hold goes on from where it began
    spliced: (state, { later }) =>
      empty(later)
        ? stay(
            { phase: 'live' },
            { kind: 'write-out', holdEnded: true },
            { kind: 'routing-changed' },
            { kind: 'process' }
          )
        : querying(later, state.heldSince),
    failed: (state, { error }) => failed(state, error),
    close: (state) => closed(state)
  },
  closed: {
    // a query or a snapshot that was under way answers: nothing more is written
    loaded: (state) => stay(state),
    taken: (state) => stay(state),
    read: (state) => stay(state),
    'stream-moved': (state) => stay(state),
    failed: (state) => stay(state),
    close: (state) => stay(state)
  }
}

export function nextMoveInState(state: MoveInState, event: MoveInEvent): MoveInStep {
  const transition = (
    MOVE_IN_TRANSITIONS[state.phase] as Record<string, Transition<MoveInPhase, MoveInEvent['kind']> | undefined>
  )[event.kind]
  if (!transition) throw new MoveInTransitionError(state.phase, event.kind)
  return transition(state as never, event as never)
}

const open = (state: MoveInState): Open => (state.phase === 'closed' ? state.from : state)

/** The first commit LSN whose entries are not all in the log yet (a move-in is pending since it), or null. */
export function heldSinceOf(state: MoveInState): bigint | null {
  const at = open(state)
  return at.phase === 'querying' || at.phase === 'read' ? at.heldSince : null
}

/**
 * Whether changes of the shape's table may reach it through its index alone (when it has one): once its views are
 * loaded, and during a move-in whose values are known, not while rows of nested subqueries are fetched.
 */
export function indexRoutableIn(state: MoveInState): boolean {
  const at = open(state)
  return at.phase === 'live' || ((at.phase === 'querying' || at.phase === 'read') && at.moveIn.fetches.length === 0)
}
