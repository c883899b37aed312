/** pg_current_snapshot() of a snapshot transaction, as xid8 decimal strings. */
export interface SnapshotInfo {
  xmin: string
  xmax: string
  xipList: string[]
  /** pg_current_wal_lsn() at the snapshot, as a decimal string. */
  databaseLsn: string
}

/**
 * A shape's snapshot, as an immutable state: `pending` until the snapshot transaction's xids are known, `building`
 * while its chunk files are written, `ready` once the last one is, `failed` when it cannot be built, `dropped` for
 * good (the shape's clients refetch). A failed or dropped state keeps the state it came from: a reader that held the
 * shape still sees the chunks written before, and tells a failure (503) from a drop (409).
 */
export type SnapshotState =
  | { readonly phase: 'pending' }
  | { readonly phase: 'building'; readonly info: SnapshotInfo; readonly chunks: number }
  | { readonly phase: 'ready'; readonly info: SnapshotInfo; readonly chunks: number }
  | { readonly phase: 'failed'; readonly error: Error; readonly from: Progress }
  | {
      readonly phase: 'dropped'
      readonly from: Exclude<SnapshotState, { phase: 'dropped' }>
      readonly failure: Error | null
    }

type Progress = Extract<SnapshotState, { phase: 'pending' | 'building' | 'ready' }>

export type SnapshotPhase = SnapshotState['phase']

export type SnapshotEvent =
  | { readonly kind: 'taken'; readonly info: SnapshotInfo }
  | { readonly kind: 'chunk'; readonly chunk: number; readonly last: boolean }
  /** A shape read back from disk: its snapshot is complete. */
  | { readonly kind: 'restored'; readonly info: SnapshotInfo; readonly chunks: number }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'dropped' }

/** A transition the snapshot's builder never makes: a fault in the code, not in the data. */
export class SnapshotTransitionError extends Error {
  override readonly name = 'SnapshotTransitionError'
  constructor(phase: SnapshotPhase, event: SnapshotEvent['kind']) {
    super(`a shape's snapshot cannot go from ${phase} on ${event}`)
  }
}

export const PENDING: SnapshotState = { phase: 'pending' }

type Transition<P extends SnapshotPhase, K extends SnapshotEvent['kind']> = (
  state: Extract<SnapshotState, { phase: P }>,
  event: Extract<SnapshotEvent, { kind: K }>
) => SnapshotState

type Table = { [P in SnapshotPhase]: { [K in SnapshotEvent['kind']]?: Transition<P, K> } }

const chunkDone = (info: SnapshotInfo, chunk: number, last: boolean): SnapshotState => ({
  phase: last ? 'ready' : 'building',
  info,
  chunks: chunk + 1
})

/** Every allowed transition; a missing entry is a SnapshotTransitionError. */
export const SNAPSHOT_TRANSITIONS: Table = {
  pending: {
    taken: (_, { info }) => ({ phase: 'building', info, chunks: 0 }),
    restored: (_, { info, chunks }) => ({ phase: 'ready', info, chunks }),
    failed: (state, { error }) => ({ phase: 'failed', error, from: state }),
    dropped: (state) => ({ phase: 'dropped', from: state, failure: null })
  },
  building: {
    chunk: (state, { chunk, last }) => chunkDone(state.info, chunk, last),
    failed: (state, { error }) => ({ phase: 'failed', error, from: state }),
    dropped: (state) => ({ phase: 'dropped', from: state, failure: null })
  },
  ready: {
    // e.g. the snapshot transaction's end failed after its last chunk was written
    failed: (state, { error }) => ({ phase: 'failed', error, from: state }),
    dropped: (state) => ({ phase: 'dropped', from: state, failure: null })
  },
  failed: {
    dropped: (state) => ({ phase: 'dropped', from: state, failure: state.error })
  },
  dropped: {
    // a cancelled build may still report what it did before it saw the cancel: nothing changes, but a late failure is
    // kept for the readers that still hold the shape
    taken: (state) => state,
    chunk: (state) => state,
    failed: (state, { error }) => ({ ...state, failure: state.failure ?? error }),
    dropped: (state) => state
  }
}

export function nextSnapshotState(state: SnapshotState, event: SnapshotEvent): SnapshotState {
  const transition = (
    SNAPSHOT_TRANSITIONS[state.phase] as Record<string, Transition<SnapshotPhase, SnapshotEvent['kind']> | undefined>
  )[event.kind]
  if (!transition) throw new SnapshotTransitionError(state.phase, event.kind)
  return transition(state as never, event as never)
}

/** How far the snapshot got before it failed or was dropped. */
function live(state: SnapshotState): Progress {
  const before = state.phase === 'dropped' ? state.from : state
  return before.phase === 'failed' ? before.from : before
}

export const snapshotInfoOf = (state: SnapshotState): SnapshotInfo | null => {
  const at = live(state)
  return at.phase === 'building' || at.phase === 'ready' ? at.info : null
}

/** Complete chunk files. */
export const readyChunksOf = (state: SnapshotState): number => {
  const at = live(state)
  return at.phase === 'building' || at.phase === 'ready' ? at.chunks : 0
}

/** The number of chunks once the last one is written, else null. */
export const snapshotChunksOf = (state: SnapshotState): number | null => {
  const at = live(state)
  return at.phase === 'ready' ? at.chunks : null
}

export const failureOf = (state: SnapshotState): Error | null =>
  state.phase === 'failed' ? state.error : state.phase === 'dropped' ? state.failure : null
