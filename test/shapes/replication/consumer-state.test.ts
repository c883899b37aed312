import { describe, expect, it } from 'vitest'
import { ReplicationConsumer } from '../../../src/main/shapes/replication/consumer'
import {
  canTransition,
  CONSUMER_PHASES,
  ConsumerTransitionError,
  type ConsumerPhase,
  type ConsumerState,
  generationOf,
  IDLE,
  isStopping,
  sessionOf,
  transition
} from '../../../src/main/shapes/replication/consumer-state'

const ALLOWED: Array<[ConsumerPhase, ConsumerPhase]> = [
  ['idle', 'connecting'],
  ['idle', 'stopping'],
  ['connecting', 'connecting'],
  ['connecting', 'streaming'],
  ['connecting', 'reconnecting'],
  ['connecting', 'stopping'],
  ['streaming', 'reconnecting'],
  ['streaming', 'stopping'],
  ['reconnecting', 'reconnecting'],
  ['reconnecting', 'connecting'],
  ['reconnecting', 'stopping'],
  ['stopping', 'stopped']
]

const REFUSED_EXAMPLES: Array<[ConsumerPhase, ConsumerPhase]> = [
  ['idle', 'streaming'],
  ['idle', 'reconnecting'],
  ['idle', 'stopped'],
  ['connecting', 'idle'],
  ['streaming', 'streaming'],
  ['streaming', 'connecting'],
  ['reconnecting', 'streaming'],
  ['stopping', 'stopping'],
  ['stopping', 'connecting'],
  ['stopping', 'reconnecting'],
  ['stopped', 'connecting'],
  ['stopped', 'stopping'],
  ['stopped', 'stopped']
]

describe('replication consumer state: the transition table', () => {
  it('allows exactly the listed transitions', () => {
    for (const from of CONSUMER_PHASES) {
      for (const to of CONSUMER_PHASES) {
        const listed = ALLOWED.some(([a, b]) => a === from && b === to)
        expect(canTransition(from, to), `${from} → ${to}`).toBe(listed)
      }
    }
    for (const [from, to] of REFUSED_EXAMPLES) expect(canTransition(from, to), `${from} → ${to}`).toBe(false)
  })

  it('makes a new frozen state on every step and refuses what the table refuses', () => {
    const connecting = transition(IDLE, { phase: 'connecting', attempt: 0, generation: 1, opening: null })
    expect(IDLE).toEqual({ phase: 'idle' })
    expect(Object.isFrozen(connecting)).toBe(true)
    expect(generationOf(connecting)).toBe(1)
    const superseded = transition(connecting, {
      ...(connecting as Extract<ConsumerState, { phase: 'connecting' }>),
      generation: null
    })
    expect(generationOf(superseded)).toBeNull()
    expect(generationOf(connecting)).toBe(1)
    expect(sessionOf(superseded)).toBeNull()
    const stopping = transition(superseded, { phase: 'stopping', done: Promise.resolve() })
    expect(isStopping(stopping)).toBe(true)
    expect(() => transition(stopping, { phase: 'connecting', attempt: 0, generation: null, opening: null })).toThrow(
      ConsumerTransitionError
    )
    const stopped = transition(stopping, { phase: 'stopped' })
    expect(() => transition(stopped, { phase: 'stopping', done: Promise.resolve() })).toThrow(
      'the replication consumer cannot go from stopped to stopping'
    )
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
      'the replication consumer cannot go from stopped to connecting'
    )
  })
})
