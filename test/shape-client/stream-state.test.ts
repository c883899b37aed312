import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MachineTransitionError } from '../../src/shared/machine'
import { ShapeStream } from '../../src/shared/shape-client/client'
import { ShapeStreamError } from '../../src/shared/shape-client/errors'
import type { Message } from '../../src/shared/shape-client/messages'
import type { ProtocolHeaders } from '../../src/shared/shape-client/protocol-headers'
import {
  initialStreamState,
  nextStreamState,
  streamTransitions,
  type Answer,
  type StreamEffect,
  type StreamEvent,
  type StreamMachineState,
  type StreamPhase
} from '../../src/shared/shape-client/stream-state'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { replay } from '../support/machine'

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

const table = streamTransitions({
  live: 'long-poll',
  sseMinConnectionMs: 1_000,
  sseFallbackAfter: 3,
  maxOnErrorRetries: 2
})

function run(events: StreamEvent[], from: StreamMachineState = initialStreamState(fields)) {
  const { state, effects } = replay(
    (at: StreamMachineState, event: StreamEvent) => nextStreamState(table, at, event),
    from,
    events
  )
  return { state, effects, phase: state.stream.phase }
}

const headers = (offset: string): ProtocolHeaders => ({
  brand: 'service',
  handle: 'h1',
  offset,
  cursor: '7',
  schema: '{"id":{"type":"int4"}}',
  upToDate: false
})
const change: Message = { key: 'k', value: { id: '1' }, headers: { operation: 'insert' } }
const upToDate: Message = { headers: { control: 'up-to-date', global_last_seen_lsn: '40' } }
const batch = (offset: string, messages: Message[]): StreamEvent => ({
  kind: 'answered',
  answer: { kind: 'messages', messages, headers: headers(offset), requestId: 1 }
})
const httpError = (kind: ShapeStreamError['kind'], status: number): StreamEvent => ({
  kind: 'answered',
  answer: { kind: 'http-error', error: new ShapeStreamError(kind, `HTTP ${status}`, 'u', status), retryAfter: null }
})
const refetch: Extract<Answer, { kind: 'must-refetch' }> = {
  kind: 'must-refetch',
  handle: 'h2',
  messages: [],
  requestId: 3,
  cacheBuster: 'cb'
}
const go: StreamEvent = { kind: 'continue' }
const kinds = (effects: readonly StreamEffect[]) => effects.map((effect) => effect.kind)

describe('shape stream machine: events', () => {
  it('catches up, then follows live; its listeners get the advanced state before the batch is published', () => {
    const started = run([{ kind: 'start' }])
    expect(started.phase).toBe('syncing')
    expect(started.effects).toEqual([{ kind: 'request', live: 'off' }])
    const first = run([batch('0_0', [change])], started.state)
    expect(first.phase).toBe('syncing')
    expect(first.state.stream).toMatchObject({ handle: 'h1', offset: '0_0', cursor: '7', upToDate: false })
    expect(first.effects).toEqual([{ kind: 'publish', messages: [change], requestId: 1 }, go])
    expect(run([go], first.state).effects).toEqual([{ kind: 'request', live: 'off' }])
    const caughtUp = run([go, batch('1_0', [change, upToDate]), go], first.state)
    expect(caughtUp.phase).toBe('live')
    expect(caughtUp.state.stream.upToDate).toBe(true)
    expect(caughtUp.effects.at(-1)).toEqual({ kind: 'request', live: 'long-poll' })
    expect(Object.isFrozen(caughtUp.state.stream)).toBe(true)
  })

  it('with live off, is done once up to date', () => {
    const off = streamTransitions({ live: 'off', sseMinConnectionMs: 1_000, sseFallbackAfter: 3, maxOnErrorRetries: 2 })
    let state = initialStreamState({ ...fields, liveMode: 'off' })
    for (const event of [{ kind: 'start' }, batch('1_0', [upToDate]), go] as StreamEvent[])
      state = nextStreamState(off, state, event).state
    expect(state.stream.phase).toBe('up-to-date')
    expect(() => nextStreamState(off, state, go)).toThrow(MachineTransitionError)
  })

  it('retries 5xx and network errors with a growing attempt, and a success resets the count', () => {
    const syncing = run([{ kind: 'start' }]).state
    const errors = run([httpError('server', 503), { kind: 'waited' }, httpError('network', 0)], syncing)
    expect(errors.phase).toBe('retrying')
    expect(errors.effects.filter((effect) => effect.kind === 'back-off').map((effect) => effect.attempt)).toEqual([
      0, 1
    ])
    const recovered = run([{ kind: 'waited' }, batch('0_0', [change])], errors.state)
    expect(recovered.state.failures).toBe(0)
  })

  it('hands other 4xx to onError: a retry backs off quietly, no answer or too many fail the stream', () => {
    const syncing = run([{ kind: 'start' }]).state
    const error = new ShapeStreamError('credentials', 'HTTP 401', 'u', 401)
    const asked = run([httpError('credentials', 401)], syncing)
    expect(asked.phase).toBe('syncing')
    expect(kinds(asked.effects)).toEqual(['ask-on-error'])
    const retried = run([{ kind: 'on-error-answered', retry: true, error }], asked.state)
    expect(retried.phase).toBe('retrying')
    expect(retried.effects).toEqual([{ kind: 'back-off', attempt: 0, error, retryAfter: null, announce: false }])
    const refused = run([{ kind: 'on-error-answered', retry: false, error }], asked.state)
    expect(refused.phase).toBe('failed')
    expect(refused.state.stream.error).toBe(error)
    expect(refused.effects).toEqual([{ kind: 'note', level: 'error', text: 'stream failed: HTTP 401' }])
    // maxOnErrorRetries is 2 here: the third 4xx in a row fails without asking
    const again = run(
      [{ kind: 'on-error-answered', retry: true, error }, { kind: 'waited' }, httpError('credentials', 401)],
      asked.state
    )
    expect(kinds(again.effects).at(-1)).toBe('ask-on-error')
    const third = run(
      [{ kind: 'on-error-answered', retry: true, error }, { kind: 'waited' }, httpError('credentials', 401)],
      again.state
    )
    expect(third.phase).toBe('failed')
  })

  it('a must-refetch publishes its control, abandons the request and subsets, and syncs from -1 with a cache-buster', () => {
    const live = run([{ kind: 'start' }, batch('1_0', [upToDate]), go]).state
    const restarted = run([{ kind: 'answered', answer: refetch }], live)
    expect(restarted.state.stream).toMatchObject({ handle: 'h2', offset: '-1', upToDate: false, schema: null })
    expect(restarted.state.cacheBuster).toBe('cb')
    expect(kinds(restarted.effects)).toEqual(['note', 'restart', 'deliver', 'continue'])
    expect(restarted.effects[2]).toEqual({
      kind: 'deliver',
      messages: [{ headers: { control: 'must-refetch' } }],
      requestId: 3
    })
    const next = run([go, batch('0_0', [change])], restarted.state)
    expect(next.effects[0]).toEqual({ kind: 'request', live: 'off' })
    expect(next.state.cacheBuster).toBeNull()
    // a subset's 409 does the same from outside the loop, without going on by itself
    expect(kinds(run([{ kind: 'refetch', answer: refetch }], live).effects)).toEqual(['note', 'restart', 'deliver'])
  })

  it('SSE: resumes from each up-to-date, and falls back to long-polls after three short connections in a row', () => {
    const sse = streamTransitions({ live: 'sse', sseMinConnectionMs: 1_000, sseFallbackAfter: 3, maxOnErrorRetries: 2 })
    let state = initialStreamState({ ...fields, liveMode: 'sse' })
    const feed = (event: StreamEvent) => {
      const step = nextStreamState(sse, state, event)
      state = step.state
      return step.effects
    }
    feed({ kind: 'start' })
    feed(batch('1_0', [upToDate]))
    expect(feed(go)).toEqual([{ kind: 'request', live: 'sse' }])
    feed({ kind: 'sse-opened', headers: headers('1_0') })
    expect(feed({ kind: 'sse-caught-up', upToDate, messages: [change, upToDate], requestId: 2 })).toEqual([
      { kind: 'publish', messages: [change, upToDate], requestId: 2 }
    ])
    expect(state.stream.offset).toBe('40_0')
    const short: StreamEvent = {
      kind: 'answered',
      answer: { kind: 'sse-ended', durationMs: 5, deliveredChanges: false }
    }
    expect(feed(short)).toEqual([{ kind: 'sse-pause', closed: 1, durationMs: 5 }])
    expect(feed({ kind: 'waited' })).toEqual([{ kind: 'request', live: 'sse' }])
    feed(short)
    feed({ kind: 'waited' })
    expect(kinds(feed(short))).toEqual(['note', 'continue'])
    expect(state.stream).toMatchObject({ liveMode: 'long-poll', sseFellBack: true })
    expect(feed(go)).toEqual([{ kind: 'request', live: 'long-poll' }])
    expect(state.stream.phase).toBe('sse-fallback')
  })

  it('stops from every phase but stopped, and a stopped stream stays stopped', () => {
    const phases: StreamPhase[] = []
    for (const events of [[], [{ kind: 'start' }], [{ kind: 'start' }, httpError('server', 500)]] as StreamEvent[][]) {
      const stopped = run([...events, { kind: 'stop' }])
      phases.push(stopped.phase)
      expect(() => run([batch('0_0', [])], stopped.state)).toThrow(
        'the shape stream cannot take answered in phase stopped'
      )
      expect(() => run([{ kind: 'stop' }], stopped.state)).toThrow(MachineTransitionError)
    }
    expect(phases).toEqual(['stopped', 'stopped', 'stopped'])
    expect(() => run([go])).toThrow('the shape stream cannot take continue in phase initial')
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
