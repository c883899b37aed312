import { describe, expect, it } from 'vitest'
import { xidSnapshot } from '../../src/shared/xid-snapshot'
import type { MoveInRead } from '../../src/main/shapes/subquery/move-in-read'
import {
  LOADING,
  MAX_HELD_TRANSACTIONS,
  type MoveIn,
  type MoveInEffect,
  type MoveInEvent,
  type MoveInPhase,
  type MoveInState,
  MoveInTransitionError,
  heldSinceOf,
  indexRoutableIn,
  nextMoveInState
} from '../../src/main/shapes/subquery/move-in-machine'

const info = { xmin: '10', xmax: '12', xipList: ['11'], databaseLsn: '500' }
const read: MoveInRead = {
  columns: ['id'],
  rows: [['1']],
  snapshot: info,
  visibility: xidSnapshot('10', '12', ['11']),
  lsn: 500n,
  candidates: new Map()
}
const moveIn: MoveIn = { moves: [{ dependency: 0, values: ['7'], entered: true, xid: 9 }], fetches: [] }
const fetching: MoveIn = { moves: [], fetches: [{ dependency: 1, lhs: ['id'], values: ['3'], xid: 9 }] }
const nothing: MoveIn = { moves: [], fetches: [] }
const boom = new Error('the move-in query failed')

const states: Record<MoveInPhase, MoveInState> = {
  loading: LOADING,
  live: { phase: 'live' },
  querying: { phase: 'querying', moveIn, heldSince: 100n },
  read: { phase: 'read', moveIn, read, heldSince: 100n },
  closed: { phase: 'closed', from: { phase: 'querying', moveIn, heldSince: 100n } }
}

const events: Record<MoveInEvent['kind'], MoveInEvent> = {
  loaded: { kind: 'loaded' },
  taken: { kind: 'taken', waiting: 1, position: 0n },
  processed: { kind: 'processed', moveIn, lsn: 200n },
  read: { kind: 'read', read, position: 0n },
  'stream-moved': { kind: 'stream-moved', position: 0n },
  spliced: { kind: 'spliced', later: nothing },
  failed: { kind: 'failed', error: boom },
  close: { kind: 'close' }
}

type Row = Record<MoveInEvent['kind'], MoveInPhase | null>

/** The whole table: the phase each (phase, event) leads to, or null where the runtime never goes. */
const table: Record<MoveInPhase, Row> = {
  loading: {
    loaded: 'live',
    taken: 'loading',
    processed: null,
    read: null,
    'stream-moved': 'loading',
    spliced: null,
    failed: 'closed',
    close: 'closed'
  },
  live: {
    loaded: null,
    taken: 'live',
    processed: 'querying',
    read: null,
    'stream-moved': 'live',
    spliced: null,
    failed: 'closed',
    close: 'closed'
  },
  querying: {
    loaded: null,
    taken: 'querying',
    processed: null,
    read: 'read',
    'stream-moved': 'querying',
    spliced: null,
    failed: 'closed',
    close: 'closed'
  },
  read: {
    loaded: null,
    taken: 'read',
    processed: null,
    read: null,
    'stream-moved': 'read',
    spliced: 'live',
    failed: 'closed',
    close: 'closed'
  },
  closed: {
    loaded: 'closed',
    taken: 'closed',
    processed: null,
    read: 'closed',
    'stream-moved': 'closed',
    spliced: null,
    failed: 'closed',
    close: 'closed'
  }
}

const cases = (Object.entries(table) as Array<[MoveInPhase, Row]>).flatMap(([phase, row]) =>
  (Object.entries(row) as Array<[MoveInEvent['kind'], MoveInPhase | null]>).map(
    ([kind, next]) => [phase, kind, next] as const
  )
)

/** Runs events from a state: the state reached and every effect asked for, in order. */
function run(state: MoveInState, ...sequence: MoveInEvent[]): { state: MoveInState; effects: MoveInEffect[] } {
  const effects: MoveInEffect[] = []
  for (const event of sequence) {
    const step = nextMoveInState(state, event)
    state = step.state
    effects.push(...step.effects)
  }
  return { state, effects }
}

const kinds = (effects: readonly MoveInEffect[]) => effects.map((effect) => effect.kind)

describe('a subquery shape’s move-in machine', () => {
  it.each(cases)('%s on %s → %s', (phase, kind, next) => {
    if (next === null) expect(() => nextMoveInState(states[phase], events[kind])).toThrow(MoveInTransitionError)
    else expect(nextMoveInState(states[phase], events[kind]).state.phase).toBe(next)
  })

  it('waits while its views load, then is routed and processes what waited', () => {
    const waiting = run(LOADING, { kind: 'taken', waiting: 3, position: 0n })
    expect(waiting.effects).toEqual([])
    expect(heldSinceOf(waiting.state)).toBe(null)
    expect(indexRoutableIn(waiting.state)).toBe(false)
    const loaded = run(waiting.state, { kind: 'loaded' })
    expect(kinds(loaded.effects)).toEqual(['routing-changed', 'process'])
    expect(indexRoutableIn(loaded.state)).toBe(true)
  })

  it('live: a transaction that moves nothing in is written at once; one that does starts a move-in held from it', () => {
    const live = states.live
    expect(run(live, { kind: 'taken', waiting: 1, position: 0n }).effects).toEqual([{ kind: 'process' }])
    expect(run(live, { kind: 'processed', moveIn: nothing, lsn: 200n }).effects).toEqual([
      { kind: 'write-out', holdEnded: false }
    ])
    const moving = run(live, { kind: 'processed', moveIn, lsn: 200n })
    // the registry learns of the hold before the query starts
    expect(moving.effects).toEqual([{ kind: 'routing-changed' }, { kind: 'query', moveIn }])
    expect(heldSinceOf(moving.state)).toBe(200n)
  })

  it('splices the move-in only once the stream has passed the WAL position its query read', () => {
    const early = run(states.querying, { kind: 'read', read, position: 499n })
    expect(early.state.phase).toBe('read')
    expect(early.effects).toEqual([])
    expect(run(early.state, { kind: 'stream-moved', position: 499n }).effects).toEqual([])
    expect(run(early.state, { kind: 'taken', waiting: 2, position: 499n }).effects).toEqual([])
    const splice = { kind: 'splice', moveIn, read }
    expect(run(early.state, { kind: 'stream-moved', position: 500n }).effects).toEqual([splice])
    expect(run(early.state, { kind: 'taken', waiting: 2, position: 501n }).effects).toEqual([splice])
    // a query that answers after the stream passed its position is spliced at once
    expect(run(states.querying, { kind: 'read', read, position: 500n }).effects).toEqual([splice])
  })

  it('after the splice: live again (the hold ends even if nothing was written), or the next move-in, held from where the first began', () => {
    const done = run(states.read, { kind: 'spliced', later: nothing })
    expect(done.state).toEqual({ phase: 'live' })
    expect(done.effects).toEqual([
      { kind: 'write-out', holdEnded: true },
      { kind: 'routing-changed' },
      { kind: 'process' }
    ])
    expect(heldSinceOf(done.state)).toBe(null)
    const chained = run(states.read, { kind: 'spliced', later: fetching })
    expect(chained.state).toEqual({ phase: 'querying', moveIn: fetching, heldSince: 100n })
    expect(chained.effects).toEqual([{ kind: 'routing-changed' }, { kind: 'query', moveIn: fetching }])
  })

  it('is not routed by its index while rows of nested subqueries are fetched', () => {
    expect(indexRoutableIn(states.querying)).toBe(true)
    expect(indexRoutableIn({ phase: 'querying', moveIn: fetching, heldSince: 1n })).toBe(false)
    expect(indexRoutableIn({ phase: 'read', moveIn: fetching, read, heldSince: 1n })).toBe(false)
  })

  it.each(['querying', 'read'] as const)(
    '%s: more transactions waiting than MAX_HELD_TRANSACTIONS give the shape up',
    (phase) => {
      const within = run(states[phase], { kind: 'taken', waiting: MAX_HELD_TRANSACTIONS, position: 0n })
      expect(within.state.phase).toBe(phase)
      const over = run(states[phase], { kind: 'taken', waiting: MAX_HELD_TRANSACTIONS + 1, position: 1000n })
      expect(over.state.phase).toBe('closed')
      expect(kinds(over.effects)).toEqual(['drop', 'fail'])
      expect(over.effects[1]).toMatchObject({ error: { message: expect.stringContaining('1000 transactions') } })
    }
  )

  it('a failure drops what waits and tells the registry once; a close drops it silently', () => {
    const failed = run(states.querying, { kind: 'failed', error: boom }, { kind: 'failed', error: new Error('again') })
    expect(failed.effects).toEqual([{ kind: 'drop' }, { kind: 'fail', error: boom }])
    expect(run(states.live, { kind: 'close' }).effects).toEqual([{ kind: 'drop' }])
  })

  it('closed: late answers change nothing, and what the registry saw last is kept', () => {
    const late = run(
      states.closed,
      { kind: 'read', read, position: 1000n },
      { kind: 'loaded' },
      { kind: 'taken', waiting: 5000, position: 1000n }
    )
    expect(late).toEqual({ state: states.closed, effects: [] })
    expect(heldSinceOf(states.closed)).toBe(100n)
    expect(indexRoutableIn(states.closed)).toBe(true)
    expect(indexRoutableIn(run(LOADING, { kind: 'close' }).state)).toBe(false)
  })

  it('never changes a state in place', () => {
    const frozen = Object.freeze({ ...states.querying }) as MoveInState
    expect(nextMoveInState(frozen, { kind: 'read', read, position: 0n }).state).toEqual({
      phase: 'read',
      moveIn,
      read,
      heldSince: 100n
    })
    expect(frozen).toEqual(states.querying)
  })
})
