import { describe, expect, it } from 'vitest'
import {
  ConnectionTransitionError,
  entryStateOf,
  initialConnection,
  nextConnection,
  type ConnectionEvent,
  type ConnectionPhase,
  type ConnectionSpec,
  type ConnectionState
} from '../../src/main/mcp/connection/machine'
import { itFollowsTheTable, type TableRow } from './support/transition-table'

const policy = { baseDelayMs: 100, maxDelayMs: 1_000, maxCrashes: 3, windowMs: 60_000 }
const spec: ConnectionSpec = { name: 'files', command: 'node server.mjs', policy }
const counters = { spec, restarts: 1, crashes: [1_000] }
const boom = { code: 'transport_error' as const, message: 'boom' }

const states: Record<ConnectionPhase, ConnectionState> = {
  idle: { phase: 'idle', ...counters },
  connecting: { phase: 'connecting', ...counters },
  connected: { phase: 'connected', ...counters },
  'needs-login': { phase: 'needs-login', ...counters },
  failed: { phase: 'failed', error: boom, ...counters },
  'crash-loop': { phase: 'crash-loop', error: { ...boom, code: 'crash_loop' }, ...counters },
  closed: { phase: 'closed', ...counters }
}

const events: Record<ConnectionEvent['kind'], ConnectionEvent> = {
  use: { kind: 'use', loginReady: true },
  bridge: { kind: 'bridge', loginReady: true },
  opened: { kind: 'opened' },
  'login-needed': { kind: 'login-needed' },
  'open-failed': { kind: 'open-failed', error: boom },
  crashed: { kind: 'crashed', at: 2_000, message: 'exited', stderr: ['oops'] },
  dropped: { kind: 'dropped' },
  reset: { kind: 'reset' },
  close: { kind: 'close' }
}

type Row = TableRow<ConnectionPhase, ConnectionEvent['kind']>

/** The whole table: the phase and the effects each (phase, event) leads to; null where the connection never goes. */
const table: Row[] = [
  ['idle', 'use', 'connecting', ['open']],
  ['idle', 'bridge', 'idle', []],
  ['idle', 'opened', null, []],
  ['idle', 'login-needed', null, []],
  ['idle', 'open-failed', null, []],
  ['idle', 'crashed', null, []],
  ['idle', 'dropped', null, []],
  ['idle', 'reset', 'idle', []],
  ['idle', 'close', 'closed', []],
  ['connecting', 'use', 'connecting', ['join']],
  ['connecting', 'bridge', 'connecting', []],
  ['connecting', 'opened', 'connected', ['adopt']],
  ['connecting', 'login-needed', 'needs-login', []],
  ['connecting', 'open-failed', 'failed', []],
  ['connecting', 'crashed', 'failed', []],
  ['connecting', 'dropped', null, []],
  ['connecting', 'reset', 'connecting', []],
  ['connecting', 'close', 'closed', ['abort-open']],
  ['connected', 'use', 'connected', ['hand-out']],
  ['connected', 'bridge', 'connected', []],
  ['connected', 'opened', null, []],
  ['connected', 'login-needed', null, []],
  ['connected', 'open-failed', null, []],
  ['connected', 'crashed', 'connecting', ['open']],
  ['connected', 'dropped', 'idle', []],
  ['connected', 'reset', 'idle', ['close-link']],
  ['connected', 'close', 'closed', ['close-link']],
  ['needs-login', 'use', 'connecting', ['open']],
  ['needs-login', 'bridge', 'needs-login', []],
  ['needs-login', 'opened', null, []],
  ['needs-login', 'login-needed', null, []],
  ['needs-login', 'open-failed', null, []],
  ['needs-login', 'crashed', null, []],
  ['needs-login', 'dropped', null, []],
  ['needs-login', 'reset', 'idle', []],
  ['needs-login', 'close', 'closed', []],
  ['failed', 'use', 'connecting', ['open']],
  ['failed', 'bridge', 'failed', []],
  ['failed', 'opened', null, []],
  ['failed', 'login-needed', null, []],
  ['failed', 'open-failed', null, []],
  ['failed', 'crashed', null, []],
  ['failed', 'dropped', null, []],
  ['failed', 'reset', 'idle', []],
  ['failed', 'close', 'closed', []],
  ['crash-loop', 'use', 'crash-loop', ['refuse']],
  ['crash-loop', 'bridge', 'crash-loop', []],
  ['crash-loop', 'opened', null, []],
  ['crash-loop', 'login-needed', null, []],
  ['crash-loop', 'open-failed', null, []],
  ['crash-loop', 'crashed', null, []],
  ['crash-loop', 'dropped', null, []],
  ['crash-loop', 'reset', 'idle', []],
  ['crash-loop', 'close', 'closed', []],
  ['closed', 'use', 'closed', ['refuse']],
  ['closed', 'bridge', 'closed', ['refuse']],
  ['closed', 'opened', 'closed', ['discard']],
  ['closed', 'login-needed', 'closed', []],
  ['closed', 'open-failed', 'closed', []],
  ['closed', 'crashed', 'closed', []],
  ['closed', 'dropped', 'closed', []],
  ['closed', 'reset', 'closed', []],
  ['closed', 'close', 'closed', []]
]

describe('an MCP connection, event by event', () => {
  itFollowsTheTable(table, states, events, nextConnection, ConnectionTransitionError)

  it.each<[ConnectionPhase, ConnectionPhase, string]>([
    ['idle', 'needs-login', 'refuse'],
    ['needs-login', 'needs-login', 'refuse'],
    ['failed', 'needs-login', 'refuse'],
    ['connecting', 'connecting', 'join'],
    ['connected', 'connected', 'hand-out']
  ])('a use without tokens in %s → %s (%s): the grant needs a person first', (phase, next, effect) => {
    const step = nextConnection(states[phase], { kind: 'use', loginReady: false })
    expect([step.state.phase, step.effects.map((e) => e.kind)]).toEqual([next, [effect]])
    if (effect === 'refuse') expect(step.effects[0]).toMatchObject({ error: { code: 'needs_login' } })
  })

  it.each<[ConnectionPhase, ConnectionPhase]>([
    ['idle', 'needs-login'],
    ['needs-login', 'needs-login'],
    ['failed', 'needs-login'],
    ['connecting', 'connecting'],
    ['connected', 'connected']
  ])('a bridge without tokens in %s → %s, refused with needs_login', (phase, next) => {
    const step = nextConnection(states[phase], { kind: 'bridge', loginReady: false })
    expect(step.state.phase).toBe(next)
    expect(step.effects).toEqual([{ kind: 'refuse', error: expect.objectContaining({ code: 'needs_login' }) }])
  })

  it('restarts a crashed server after a backoff that doubles, and gives up in a crash loop', () => {
    let state: ConnectionState = { ...initialConnection(spec), phase: 'connected' }
    const crash = (at: number) => {
      const step = nextConnection(state, { kind: 'crashed', at, message: `exited at ${at}`, stderr: ['last words'] })
      state = step.state
      return step.effects
    }
    expect(crash(10)).toEqual([{ kind: 'open', delayMs: 100 }])
    expect([state.phase, state.restarts]).toEqual(['connecting', 1])
    state = nextConnection(state, { kind: 'opened' }).state
    expect(crash(20)).toEqual([{ kind: 'open', delayMs: 200 }])
    state = nextConnection(state, { kind: 'opened' }).state
    expect(crash(30)).toEqual([])
    expect(state).toMatchObject({
      phase: 'crash-loop',
      restarts: 2,
      error: {
        code: 'crash_loop',
        message: '`node server.mjs` crashed 3 times within 60 s; reconnect to try again (last: exited at 30)',
        stderr: ['last words']
      }
    })
    expect(entryStateOf(state)).toBe('error')
    // a reconnect forgets the crashes, not the restarts
    state = nextConnection(state, { kind: 'reset' }).state
    expect([state.phase, state.crashes, state.restarts]).toEqual(['idle', [], 2])
  })

  it('counts only the crashes within the window, and caps the backoff', () => {
    const old = { ...states.connected, crashes: [0, 1] }
    const later = nextConnection(old, { kind: 'crashed', at: 70_000, message: 'exited', stderr: [] })
    expect(later.state.crashes).toEqual([70_000])
    expect(later.effects).toEqual([{ kind: 'open', delayMs: 100 }])
    const many = {
      ...states.connected,
      spec: { ...spec, policy: { ...policy, maxCrashes: 10 } },
      crashes: [1, 2, 3, 4, 5]
    }
    expect(nextConnection(many, { kind: 'crashed', at: 6, message: 'exited', stderr: [] }).effects).toEqual([
      { kind: 'open', delayMs: 1_000 }
    ])
  })

  it('a server that cannot start fails the callers and is not restarted; the crash counts', () => {
    const step = nextConnection(states.connecting, {
      kind: 'crashed',
      at: 2_000,
      message: 'could not start',
      stderr: []
    })
    expect(step.effects).toEqual([])
    expect(step.state).toMatchObject({ phase: 'failed', crashes: [1_000, 2_000], restarts: 1 })
    expect(step.state).toMatchObject({ error: { code: 'transport_error', message: 'could not start' } })
  })

  it('a closed connection refuses every use, and closes a client an attempt still brings', () => {
    expect(nextConnection(states.closed, events.use).effects).toEqual([
      { kind: 'refuse', error: { code: 'transport_error', message: 'the connection is closed' } }
    ])
    expect(nextConnection(states.closed, events.opened).effects).toEqual([{ kind: 'discard' }])
  })

  it('never changes a state in place, and gives the same state where nothing changes', () => {
    const frozen = Object.freeze({ ...states.connected, crashes: Object.freeze([1_000]) }) as ConnectionState
    const step = nextConnection(frozen, events.crashed)
    expect(step.state).not.toBe(frozen)
    expect(frozen).toEqual(states.connected)
    expect(nextConnection(frozen, events.use).state).toBe(frozen)
  })

  it.each<[ConnectionPhase, string]>([
    ['idle', 'idle'],
    ['connecting', 'connecting'],
    ['connected', 'connected'],
    ['needs-login', 'needs-login'],
    ['failed', 'error'],
    ['crash-loop', 'error'],
    ['closed', 'idle']
  ])('%s reads as the entry state %s', (phase, entryState) => {
    expect(entryStateOf(states[phase])).toBe(entryState)
  })
})
