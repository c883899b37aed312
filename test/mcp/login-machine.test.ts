import { describe, expect, it } from 'vitest'
import type { CallbackParams } from '../../src/main/mcp/auth/callback-server'
import {
  LoginTransitionError,
  initialLogin,
  nextLogin,
  type Expected,
  type LoginEvent,
  type LoginPhase,
  type LoginState
} from '../../src/main/mcp/auth/login-machine'
import { itFollowsTheTable, type TableRow } from './support/transition-table'

const expected: Expected = {
  state: 'the-state',
  issuer: 'https://as.example/',
  issuerFromMetadata: true,
  sendsIss: false
}
const base = { server: 'github', attempt: 2 }
const boom = { code: 'auth_unavailable' as const, message: 'discovery failed' }

const states: Record<LoginPhase, LoginState> = {
  idle: { phase: 'idle', ...base },
  starting: { phase: 'starting', ...base },
  'awaiting-callback': { phase: 'awaiting-callback', expected, ...base },
  completing: { phase: 'completing', ...base },
  closed: { phase: 'closed', ...base }
}

const params = (over: Partial<CallbackParams> = {}): CallbackParams => ({
  code: 'the-code',
  state: 'the-state',
  iss: null,
  error: null,
  errorDescription: null,
  ...over
})

/** Reports of the current attempt (2). */
const events: { [K in LoginEvent['kind']]: Extract<LoginEvent, { kind: K }> } = {
  start: { kind: 'start' },
  redirected: { kind: 'redirected', attempt: 2, authorizeUrl: 'https://as.example/authorize?x', expected },
  authorized: { kind: 'authorized', attempt: 2 },
  'start-failed': { kind: 'start-failed', attempt: 2, error: boom },
  callback: { kind: 'callback', params: params() },
  completed: { kind: 'completed', attempt: 2, state: 'connected', error: null },
  'exchange-failed': { kind: 'exchange-failed', attempt: 2, error: boom },
  close: { kind: 'close' }
}

type Row = TableRow<LoginPhase, LoginEvent['kind']>

/** The whole table: the phase and the effects each (phase, event) leads to; null where the login never goes. */
const table: Row[] = [
  ['idle', 'start', 'starting', ['discover']],
  ['idle', 'redirected', null, []],
  ['idle', 'authorized', null, []],
  ['idle', 'start-failed', null, []],
  ['idle', 'callback', 'idle', ['reply']],
  ['idle', 'completed', null, []],
  ['idle', 'exchange-failed', null, []],
  ['idle', 'close', 'closed', []],
  ['starting', 'start', 'starting', ['discover']],
  ['starting', 'redirected', 'awaiting-callback', ['open-browser']],
  ['starting', 'authorized', 'completing', ['reconnect']],
  ['starting', 'start-failed', 'idle', ['settle']],
  ['starting', 'callback', 'starting', ['reply']],
  ['starting', 'completed', null, []],
  ['starting', 'exchange-failed', null, []],
  ['starting', 'close', 'closed', ['settle']],
  ['awaiting-callback', 'start', 'starting', ['discover']],
  ['awaiting-callback', 'redirected', null, []],
  ['awaiting-callback', 'authorized', null, []],
  ['awaiting-callback', 'start-failed', null, []],
  ['awaiting-callback', 'callback', 'completing', ['note', 'exchange']],
  ['awaiting-callback', 'completed', null, []],
  ['awaiting-callback', 'exchange-failed', null, []],
  ['awaiting-callback', 'close', 'closed', ['settle']],
  ['completing', 'start', 'starting', ['discover']],
  ['completing', 'redirected', null, []],
  ['completing', 'authorized', null, []],
  ['completing', 'start-failed', null, []],
  ['completing', 'callback', 'completing', ['reply']],
  ['completing', 'completed', 'idle', ['settle', 'reply']],
  ['completing', 'exchange-failed', 'idle', ['settle', 'reply']],
  ['completing', 'close', 'closed', ['settle']],
  ['closed', 'start', null, []],
  ['closed', 'redirected', 'closed', []],
  ['closed', 'authorized', 'closed', []],
  ['closed', 'start-failed', 'closed', []],
  ['closed', 'callback', 'closed', ['reply']],
  ['closed', 'completed', 'closed', ['reply']],
  ['closed', 'exchange-failed', 'closed', ['reply']],
  ['closed', 'close', 'closed', []]
]

/** Runs events from a state: the state reached and every effect, in order. */
function run(state: LoginState, ...events: LoginEvent[]) {
  const effects = events.flatMap((event) => {
    const step = nextLogin(state, event)
    state = step.state
    return step.effects
  })
  return { state, effects }
}

describe('an OAuth login, event by event', () => {
  itFollowsTheTable(table, states, events, nextLogin, LoginTransitionError)

  it('a login from the start: discovery, the browser, the callback, the exchange, connected', () => {
    const { state, effects } = run(
      initialLogin('github'),
      { kind: 'start', scope: 'repo' },
      { ...events.redirected, attempt: 1 },
      events.callback,
      { ...events.completed, attempt: 1 }
    )
    expect(state).toEqual({ phase: 'idle', server: 'github', attempt: 1 })
    expect(effects).toEqual([
      { kind: 'discover', attempt: 1, scope: 'repo' },
      { kind: 'open-browser', authorizeUrl: 'https://as.example/authorize?x' },
      { kind: 'note', status: 200, text: 'code and state received' },
      { kind: 'exchange', attempt: 1, code: 'the-code' },
      { kind: 'settle', error: null },
      { kind: 'reply', ok: true, message: 'github is connected.' }
    ])
  })

  it('a callback with another state is refused and the login stays in flight; the right one is then taken', () => {
    const refused = nextLogin(states['awaiting-callback'], { kind: 'callback', params: params({ state: 'forged' }) })
    expect(refused.state).toBe(states['awaiting-callback'])
    expect(refused.effects).toEqual([
      { kind: 'note', status: 400, text: 'state does not match the request in flight: refused' },
      {
        kind: 'reply',
        ok: false,
        message: 'the state parameter does not match the login in flight; start the login again'
      }
    ])
    expect(nextLogin(refused.state, events.callback).state.phase).toBe('completing')
    expect(nextLogin(refused.state, { kind: 'callback', params: params({ state: null }) }).effects[1]).toMatchObject({
      ok: false
    })
  })

  it.each<[string, Partial<Expected>, string | null, string | null]>([
    ['the issuer of the metadata', {}, 'https://as.example/', null],
    ['another issuer', {}, 'https://evil.example/', 'iss https://evil.example/ is not https://as.example/'],
    ['the metadata issuer but for a trailing slash', {}, 'https://as.example', 'iss https://as.example is not'],
    ['the server URL but for a trailing slash', { issuerFromMetadata: false }, 'https://as.example', null],
    ['no iss where none is advertised', {}, null, null],
    ['no iss where the server advertises it', { sendsIss: true }, null, 'no iss although the authorisation server'],
    ['an iss where the issuer is unknown', { issuer: undefined, issuerFromMetadata: false }, 'https://x/', 'unknown']
  ])('a callback with %s (RFC 9207)', (_case, over, iss, refusal) => {
    const state: LoginState = { ...states['awaiting-callback'], expected: { ...expected, ...over } } as LoginState
    const step = nextLogin(state, { kind: 'callback', params: params({ iss }) })
    if (refusal === null) {
      expect(step.state.phase).toBe('completing')
      return
    }
    expect(step.state.phase).toBe('idle')
    expect(step.effects[0]).toMatchObject({ kind: 'note', status: 400 })
    expect((step.effects[0] as { text: string }).text).toContain(refusal)
    expect(step.effects.slice(1)).toEqual([
      { kind: 'settle', error: { code: 'needs_login', message: expect.stringMatching(/iss|another/) } },
      { kind: 'reply', ok: false, message: expect.any(String) }
    ])
  })

  it('the authorisation server refused, or sent no code: the waiters hear it, the browser is told', () => {
    const denied = nextLogin(states['awaiting-callback'], {
      kind: 'callback',
      params: params({ code: null, error: 'access_denied', errorDescription: 'the person said no' })
    })
    expect(denied.state.phase).toBe('idle')
    expect(denied.effects).toEqual([
      { kind: 'note', status: null, text: 'access_denied: the person said no' },
      { kind: 'settle', error: { code: 'needs_login', message: 'the authorisation server refused: access_denied' } },
      { kind: 'reply', ok: false, message: 'login refused: access_denied' }
    ])
    expect(
      nextLogin(states['awaiting-callback'], { kind: 'callback', params: params({ code: null }) }).effects
    ).toEqual([
      { kind: 'settle', error: { code: 'needs_login', message: 'the callback carried no code' } },
      { kind: 'reply', ok: false, message: 'no authorisation code' }
    ])
  })

  it('an exchange that fails, or a server still not connected after it, ends the login with the error', () => {
    expect(nextLogin(states.completing, events['exchange-failed']).effects).toEqual([
      { kind: 'settle', error: boom },
      { kind: 'reply', ok: false, message: 'the token exchange failed: discovery failed' }
    ])
    const refused = { code: 'needs_login' as const, message: 'the tokens were refused' }
    expect(
      nextLogin(states.completing, { kind: 'completed', attempt: 2, state: 'needs-login', error: refused }).effects
    ).toEqual([
      { kind: 'settle', error: refused },
      { kind: 'reply', ok: false, message: 'github: the tokens were refused' }
    ])
  })

  it('a callback outside a login, or brought twice, finds no login in flight', () => {
    const message = 'no login is in flight for github: start the login again'
    for (const phase of ['idle', 'starting', 'completing', 'closed'] as const)
      expect(nextLogin(states[phase], events.callback).effects).toEqual([{ kind: 'reply', ok: false, message }])
  })

  it('a new login supersedes the one in flight: what the earlier attempt reports changes nothing', () => {
    const restarted = nextLogin(states['awaiting-callback'], { kind: 'start', scope: 'repo admin' })
    expect(restarted).toEqual({
      state: { phase: 'starting', server: 'github', attempt: 3 },
      effects: [{ kind: 'discover', attempt: 3, scope: 'repo admin' }]
    })
    for (const kind of ['redirected', 'authorized', 'start-failed'] as const)
      expect(nextLogin(restarted.state, events[kind])).toEqual({ state: restarted.state, effects: [] })
    // an exchange of the earlier attempt still answers its own callback, and settles nothing
    expect(nextLogin(restarted.state, events.completed)).toEqual({
      state: restarted.state,
      effects: [{ kind: 'reply', ok: true, message: 'github is connected.' }]
    })
    const now = nextLogin(restarted.state, { ...events.redirected, attempt: 3 })
    expect(now.state).toMatchObject({ phase: 'awaiting-callback', attempt: 3 })
  })

  it('discovery that fails ends the login: the waiters hear the error', () => {
    expect(nextLogin(states.starting, events['start-failed'])).toEqual({
      state: states.idle,
      effects: [{ kind: 'settle', error: boom }]
    })
  })

  it('an entry removed during a login tells the waiters; what its attempt reports afterwards changes nothing', () => {
    const closed = nextLogin(states['awaiting-callback'], events.close)
    expect(closed.effects).toEqual([
      { kind: 'settle', error: { code: 'needs_login', message: 'github was removed before the login finished' } }
    ])
    expect(nextLogin(closed.state, events.redirected).state).toBe(closed.state)
    expect(() => nextLogin(closed.state, events.start)).toThrow(LoginTransitionError)
  })

  it('never changes a state in place, and gives the same state where nothing changes', () => {
    const frozen = Object.freeze({ ...states['awaiting-callback'] }) as LoginState
    expect(nextLogin(frozen, events.callback).state).not.toBe(frozen)
    expect(frozen).toEqual(states['awaiting-callback'])
    expect(nextLogin(frozen, { kind: 'callback', params: params({ state: 'x' }) }).state).toBe(frozen)
  })
})
