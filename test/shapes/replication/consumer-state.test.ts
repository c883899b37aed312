import { describe, expect, it } from 'vitest'
import { MachineTransitionError } from '../../../src/shared/machine'
import { replay } from '../../support/machine'
import { ReplicationConsumer } from '../../../src/main/shapes/replication/consumer'
import {
  type ConsumerEffect,
  type ConsumerEvent,
  type ConsumerState,
  generationOf,
  IDLE,
  isStopping,
  nextConsumerState,
  sessionOf
} from '../../../src/main/shapes/replication/consumer-state'
import type { ReplicationSession } from '../../../src/main/shapes/replication/session'

const run = (events: ConsumerEvent[], from: ConsumerState = IDLE) => replay(nextConsumerState, from, events)

const session = (name: string): ReplicationSession => ({ name }) as unknown as ReplicationSession
const first = session('first')
const second = session('second')
const opening = Promise.resolve()
const done = Promise.resolve()
const opened = (generation: number, which = first): ConsumerEvent => ({ kind: 'opened', generation, session: which })
const failed = (error = 'connection reset'): ConsumerEvent => ({ kind: 'session-failed', error })
const interrupted = (error = 'connection reset'): ConsumerEffect[] => [
  { kind: 'log', line: `replication interrupted: ${error}` },
  { kind: 'status', state: 'reconnecting', error }
]
const streaming: ConsumerEvent[] = [{ kind: 'connect' }, { kind: 'opening', generation: 1, opening }, opened(1)]

describe('replication consumer machine: events', () => {
  it('connects: a session numbered when it is being opened streams once it opened', () => {
    const { state, effects } = run(streaming)
    expect(state).toEqual({ phase: 'streaming', generation: 1, session: first })
    expect(effects).toEqual([{ kind: 'status', state: 'streaming' }])
    expect(sessionOf(state)).toBe(first)
    expect(generationOf(state)).toBe(1)
    expect(Object.isFrozen(state)).toBe(true)
  })

  it('a failed session is closed, and the connection backs off and reconnects with the next attempt', () => {
    const down = run([failed()], run(streaming).state)
    expect(down.state).toEqual({ phase: 'reconnecting', attempt: 1, error: 'connection reset' })
    expect(down.effects).toEqual([
      { kind: 'close-session', session: first },
      ...interrupted(),
      { kind: 'back-off', attempt: 1 }
    ])
    // more failures reported meanwhile: recorded, the one timer stays
    expect(run([failed('late')], down.state)).toEqual({
      state: { phase: 'reconnecting', attempt: 1, error: 'late' },
      effects: interrupted('late')
    })
    const retried = run([{ kind: 'retry-due' }, { kind: 'connect-failed', error: 'refused' }], down.state)
    expect(retried.state).toEqual({ phase: 'reconnecting', attempt: 2, error: 'refused' })
    expect(retried.effects).toEqual([
      { kind: 'log', line: 'reconnecting failed: refused' },
      { kind: 'status', state: 'reconnecting', error: 'refused' },
      { kind: 'back-off', attempt: 2 }
    ])
    const back = run(
      [{ kind: 'retry-due' }, { kind: 'opening', generation: 2, opening }, opened(2, second)],
      retried.state
    )
    expect(back.state).toEqual({ phase: 'streaming', generation: 2, session: second })
  })

  it('a failure reported while connecting supersedes the session being opened: it is closed when it opens', () => {
    const connecting = run([{ kind: 'connect' }, { kind: 'opening', generation: 1, opening }, failed('apply failed')])
    expect(connecting.state).toEqual({ phase: 'connecting', attempt: 0, generation: null, opening })
    expect(connecting.effects).toEqual(interrupted('apply failed'))
    expect(generationOf(connecting.state)).toBeNull()
    const late = run([opened(1)], connecting.state)
    expect(late.state).toBe(connecting.state)
    expect(late.effects).toEqual([{ kind: 'close-session', session: first }])
    expect(run([{ kind: 'connect-failed', error: 'superseded' }], late.state).state).toMatchObject({
      phase: 'reconnecting',
      attempt: 1
    })
  })

  it('stops from every phase with what that phase holds, and ignores what comes late', () => {
    expect(run([{ kind: 'stop', done }]).effects).toEqual([])
    expect(run([{ kind: 'stop', done }], run(streaming).state).effects).toEqual([
      { kind: 'close-session', session: first }
    ])
    const backingOff = run([failed()], run(streaming).state).state
    expect(run([{ kind: 'stop', done }], backingOff).effects).toEqual([{ kind: 'cancel-back-off' }])
    const opening1 = run(streaming.slice(0, 2)).state
    const stopping = run([{ kind: 'stop', done }], opening1)
    expect(stopping.effects).toEqual([{ kind: 'await-opening', opening }])
    expect(isStopping(stopping.state)).toBe(true)
    // the session opening meanwhile is closed; failures after stop() change nothing
    const late = run([opened(1), failed(), { kind: 'connect-failed', error: 'x' }, { kind: 'closed' }], stopping.state)
    expect(late).toEqual({ state: { phase: 'stopped' }, effects: [{ kind: 'close-session', session: first }] })
    expect(run([opened(1, second)], late.state).effects).toEqual([{ kind: 'close-session', session: second }])
  })

  it('refuses what the consumer never does', () => {
    expect(() => run([opened(1)])).toThrow(MachineTransitionError)
    expect(() => run([{ kind: 'retry-due' }], run(streaming).state)).toThrow(
      'the replication consumer cannot take retry-due in phase streaming'
    )
    expect(() => run([{ kind: 'connect' }], run(streaming).state)).toThrow(MachineTransitionError)
    expect(() => run([{ kind: 'stop', done }], { phase: 'stopped' })).toThrow(MachineTransitionError)
  })
})

describe('replication consumer state: the consumer asks the table', () => {
  const options = {
    // never connected to: stop() comes first
    connectionString: 'postgres://nobody@127.0.0.1:1/none',
    slotName: 'syncscope_state_test',
    publicationName: 'syncscope_state_test',
    appliedLsn: null,
    onTransaction: async (): Promise<void> => undefined,
    onSlotLost: async (): Promise<void> => undefined
  }

  it('refuses to connect once stopped, and a second stop() waits for the same end', async () => {
    const consumer = new ReplicationConsumer(options)
    const first = consumer.stop()
    const second = consumer.stop()
    await Promise.all([first, second])
    await consumer.stop()
    await expect(consumer.connect(false)).rejects.toThrow(
      'the replication consumer cannot take connect in phase stopped'
    )
  })
})
