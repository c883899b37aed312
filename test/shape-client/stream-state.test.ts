import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShapeStream } from '../../src/shared/shape-client/client'
import {
  canTransition,
  initialStreamState,
  STREAM_PHASES,
  StreamTransitionError,
  transition,
  type StreamPhase
} from '../../src/shared/shape-client/stream-state'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const ALLOWED: Array<[StreamPhase, StreamPhase]> = [
  ['initial', 'syncing'],
  ['initial', 'stopped'],
  ['syncing', 'syncing'],
  ['syncing', 'live'],
  ['syncing', 'retrying'],
  ['syncing', 'up-to-date'],
  ['syncing', 'stopped'],
  ['syncing', 'failed'],
  ['live', 'live'],
  ['live', 'sse-fallback'],
  ['live', 'syncing'],
  ['live', 'retrying'],
  ['live', 'stopped'],
  ['live', 'failed'],
  ['sse-fallback', 'sse-fallback'],
  ['sse-fallback', 'syncing'],
  ['sse-fallback', 'retrying'],
  ['sse-fallback', 'stopped'],
  ['sse-fallback', 'failed'],
  ['retrying', 'retrying'],
  ['retrying', 'syncing'],
  ['retrying', 'live'],
  ['retrying', 'sse-fallback'],
  ['retrying', 'stopped'],
  ['retrying', 'failed'],
  ['up-to-date', 'stopped'],
  ['failed', 'stopped']
]

const REFUSED_EXAMPLES: Array<[StreamPhase, StreamPhase]> = [
  ['initial', 'live'],
  ['initial', 'failed'],
  ['syncing', 'sse-fallback'],
  ['sse-fallback', 'live'],
  ['live', 'up-to-date'],
  ['up-to-date', 'syncing'],
  ['stopped', 'live'],
  ['stopped', 'syncing'],
  ['stopped', 'failed'],
  ['stopped', 'stopped'],
  ['failed', 'retrying'],
  ['failed', 'syncing']
]

const fields = {
  brand: null,
  handle: null,
  offset: '-1',
  cursor: null,
  schema: null,
  upToDate: false,
  liveMode: 'long-poll',
  sseFellBack: false,
  error: null
} as const

describe('shape stream state: the transition table', () => {
  it('allows exactly the listed transitions', () => {
    for (const from of STREAM_PHASES) {
      for (const to of STREAM_PHASES) {
        const listed = ALLOWED.some(([a, b]) => a === from && b === to)
        expect(canTransition(from, to), `${from} → ${to}`).toBe(listed)
      }
    }
    for (const [from, to] of REFUSED_EXAMPLES) expect(canTransition(from, to), `${from} → ${to}`).toBe(false)
  })

  it('makes a new frozen state on every step and refuses what the table refuses', () => {
    const start = initialStreamState(fields)
    const syncing = transition(start, 'syncing', { handle: 'h' })
    expect(start).toMatchObject({ phase: 'initial', handle: null })
    expect(syncing).toMatchObject({ phase: 'syncing', handle: 'h' })
    expect(Object.isFrozen(syncing)).toBe(true)
    const stopped = transition(syncing, 'stopped')
    expect(() => transition(stopped, 'live')).toThrow(StreamTransitionError)
    expect(() => transition(stopped, 'live')).toThrow('the shape stream cannot go from stopped to live')
  })
})

describe('shape stream state: a stream stopped by a listener', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000 })
  })
  afterAll(async () => server?.close())

  it('stays stopped when a batch listener stops it (it used to go back to syncing)', async () => {
    const stream = new ShapeStream({ url: `${server.url}/v1/shape`, params: { table: 'projects' } })
    const phases: StreamPhase[] = []
    stream.onState((state) => phases.push(state.phase))
    stream.subscribe(() => stream.stop())
    await stream.start()
    expect(stream.current.phase).toBe('stopped')
    expect(phases.indexOf('stopped')).toBe(phases.length - 1)
    expect(phases.slice(0, -1).every((phase) => phase === 'syncing')).toBe(true)
  })
})
