import { describe, expect, it } from 'vitest'
import { MachineTransitionError } from '../../../src/shared/machine'
import { replay } from '../../support/machine'
import {
  FLUSH_IDLE,
  type FlushEffect,
  type FlushEvent,
  type FlushState,
  flushFailureOf,
  nextFlushState
} from '../../../src/main/shapes/replication/flush-state'

const run = (events: FlushEvent[], from: FlushState = FLUSH_IDLE) => replay(nextFlushState, from, events)

const requested: FlushEvent = { kind: 'requested' }
const succeeded: FlushEvent = { kind: 'succeeded' }
const failed = (message = 'disk full'): FlushEvent => ({ kind: 'failed', message })
const flush: FlushEffect = { kind: 'flush' }

describe("the collector's flush machine", () => {
  it('starts a flush when asked, and one more after it when asked meanwhile, however often', () => {
    expect(run([requested])).toEqual({
      state: { phase: 'flushing', again: false, retry: false, failure: null },
      effects: [flush]
    })
    const during = run([requested, requested, requested])
    expect(during.state).toMatchObject({ phase: 'flushing', again: true })
    expect(during.effects).toEqual([flush])
    expect(run([requested, requested, succeeded]).effects).toEqual([flush, flush])
    expect(run([requested, requested, succeeded, succeeded])).toEqual({ state: FLUSH_IDLE, effects: [flush, flush] })
  })

  it('after a failure: logs it once, keeps it until a success, and retries from one timer', () => {
    const first = run([requested, failed()])
    expect(first.state).toEqual({ phase: 'idle', retry: true, failure: 'disk full' })
    expect(first.effects).toEqual([flush, { kind: 'log', line: 'disk full' }, { kind: 'retry-later' }])
    expect(flushFailureOf(first.state)).toBe('disk full')

    // asked meanwhile: flushed at once, and the same failure is neither logged again nor given a second timer
    const again = run([requested, failed()], first.state)
    expect(again.effects).toEqual([flush])
    expect(run([requested, failed('another')], first.state).effects).toEqual([flush, { kind: 'log', line: 'another' }])

    const retried = run([{ kind: 'retry-due' }, succeeded], first.state)
    expect(retried.effects).toEqual([flush])
    expect(retried.state).toEqual(FLUSH_IDLE)
    expect(flushFailureOf(retried.state)).toBeNull()
  })

  it('a failure with more asked for meanwhile flushes again at once, the timer set too', () => {
    expect(run([requested, requested, failed()]).effects).toEqual([
      flush,
      { kind: 'log', line: 'disk full' },
      { kind: 'retry-later' },
      flush
    ])
  })

  it('a retry due while a flush runs is one more flush after it', () => {
    const failedOnce = run([requested, failed()]).state
    const step = run([requested, { kind: 'retry-due' }], failedOnce)
    expect(step.state).toEqual({ phase: 'flushing', again: true, retry: false, failure: 'disk full' })
    expect(run([succeeded], step.state).effects).toEqual([flush])
  })

  it('stops: cancels the retry, lets a running flush end, and starts none after', () => {
    const failedOnce = run([requested, failed()]).state
    expect(run([{ kind: 'stop' }], failedOnce)).toEqual({
      state: { phase: 'stopped', failure: 'disk full' },
      effects: [{ kind: 'cancel-retry' }]
    })
    const stopped = run([requested, requested, { kind: 'stop' }, succeeded, requested, { kind: 'retry-due' }])
    expect(stopped.state).toEqual({ phase: 'stopped', failure: null })
    expect(stopped.effects).toEqual([flush])
    expect(run([failed()], stopped.state).effects).toEqual([])
  })

  it('refuses what never happens: a flush ending when none runs', () => {
    expect(() => nextFlushState(FLUSH_IDLE, succeeded)).toThrow(MachineTransitionError)
    expect(() => nextFlushState(FLUSH_IDLE, failed())).toThrow(/cannot take failed in phase idle/)
  })

  it('makes frozen states', () => {
    expect(Object.isFrozen(run([requested]).state)).toBe(true)
  })
})
