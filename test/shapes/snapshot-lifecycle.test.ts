import { describe, expect, it } from 'vitest'
import {
  PENDING,
  type SnapshotEvent,
  type SnapshotPhase,
  type SnapshotState,
  SnapshotTransitionError,
  failureOf,
  nextSnapshotState,
  readyChunksOf,
  snapshotChunksOf,
  snapshotInfoOf
} from '../../src/main/shapes/storage/snapshot-lifecycle'

const info = { xmin: '10', xmax: '12', xipList: ['11'], databaseLsn: '100' }
const boom = new Error('division by zero')

const states: Record<SnapshotPhase, SnapshotState> = {
  pending: PENDING,
  building: { phase: 'building', info, chunks: 1 },
  ready: { phase: 'ready', info, chunks: 2 },
  failed: { phase: 'failed', error: boom, from: { phase: 'building', info, chunks: 1 } },
  dropped: { phase: 'dropped', from: { phase: 'ready', info, chunks: 2 }, failure: null }
}

const events: Record<SnapshotEvent['kind'], SnapshotEvent> = {
  taken: { kind: 'taken', info },
  chunk: { kind: 'chunk', chunk: 1, last: false },
  restored: { kind: 'restored', info, chunks: 3 },
  failed: { kind: 'failed', error: boom },
  dropped: { kind: 'dropped' }
}

/** The whole table: the phase each (phase, event) leads to, or null where the builder never goes. */
const table: Record<SnapshotPhase, Record<SnapshotEvent['kind'], SnapshotPhase | null>> = {
  pending: { taken: 'building', chunk: null, restored: 'ready', failed: 'failed', dropped: 'dropped' },
  building: { taken: null, chunk: 'building', restored: null, failed: 'failed', dropped: 'dropped' },
  ready: { taken: null, chunk: null, restored: null, failed: 'failed', dropped: 'dropped' },
  failed: { taken: null, chunk: null, restored: null, failed: null, dropped: 'dropped' },
  dropped: { taken: 'dropped', chunk: 'dropped', restored: null, failed: 'dropped', dropped: 'dropped' }
}

describe('a shape snapshot lifecycle', () => {
  for (const [phase, row] of Object.entries(table) as [
    SnapshotPhase,
    Record<SnapshotEvent['kind'], SnapshotPhase | null>
  ][]) {
    for (const [kind, next] of Object.entries(row) as [SnapshotEvent['kind'], SnapshotPhase | null][]) {
      it(`${phase} on ${kind} → ${next ?? 'refused'}`, () => {
        const state = states[phase]
        if (next === null) expect(() => nextSnapshotState(state, events[kind])).toThrow(SnapshotTransitionError)
        else expect(nextSnapshotState(state, events[kind]).phase).toBe(next)
      })
    }
  }

  it('never changes a state in place', () => {
    const frozen = Object.freeze({ phase: 'building', info, chunks: 1 }) as SnapshotState
    expect(nextSnapshotState(frozen, { kind: 'chunk', chunk: 1, last: true })).toEqual({
      phase: 'ready',
      info,
      chunks: 2
    })
    expect(frozen).toEqual({ phase: 'building', info, chunks: 1 })
  })

  it('counts the chunks written: the last one makes the snapshot ready', () => {
    let state = nextSnapshotState(PENDING, { kind: 'taken', info })
    expect([snapshotInfoOf(state), readyChunksOf(state), snapshotChunksOf(state)]).toEqual([info, 0, null])
    state = nextSnapshotState(state, { kind: 'chunk', chunk: 0, last: false })
    expect([readyChunksOf(state), snapshotChunksOf(state)]).toEqual([1, null])
    state = nextSnapshotState(state, { kind: 'chunk', chunk: 1, last: true })
    expect([state.phase, readyChunksOf(state), snapshotChunksOf(state)]).toEqual(['ready', 2, 2])
  })

  it('keeps what a reader still needs through a failure and a drop: the chunks written and the failure', () => {
    const building = nextSnapshotState(nextSnapshotState(PENDING, { kind: 'taken', info }), {
      kind: 'chunk',
      chunk: 0,
      last: false
    })
    const failed = nextSnapshotState(building, { kind: 'failed', error: boom })
    const dropped = nextSnapshotState(failed, { kind: 'dropped' })
    expect([snapshotInfoOf(dropped), readyChunksOf(dropped), failureOf(dropped)]).toEqual([info, 1, boom])
  })

  it('a drop without a failure stays a drop (409) when the cancelled build reports late, keeping its first failure', () => {
    const dropped = nextSnapshotState(PENDING, { kind: 'dropped' })
    expect(failureOf(nextSnapshotState(dropped, { kind: 'taken', info }))).toBeNull()
    const late = nextSnapshotState(dropped, { kind: 'failed', error: boom })
    expect([late.phase, failureOf(late)]).toEqual(['dropped', boom])
    expect(failureOf(nextSnapshotState(late, { kind: 'failed', error: new Error('second') }))).toBe(boom)
  })
})
