import type { McpState, McpToolError } from '../../../shared/contract/mcp'
import { sameIssuer, statesMatch } from './authorization-code'
import type { CallbackParams } from './callback-server'

/**
 * One server's authorization-code login in the browser, as an immutable state. `idle`: no login in flight; a callback
 * is refused. `starting`: discovery, registration and the authorisation URL are under way. `awaiting-callback`: the
 * browser has the URL; only a callback with its `state` (and the issuer's `iss`) is taken. `completing`: the code is
 * being exchanged for tokens and the server reconnected. `closed`: the entry is gone. Each attempt has a number: what
 * an earlier attempt still reports once a new login started changes nothing. A state never changes: each event gives
 * a new one (or the same one when nothing changes), with the effects the login flow acts on.
 */
export type LoginState =
  | ({ readonly phase: 'idle' } & Attempt)
  | ({ readonly phase: 'starting' } & Attempt)
  | ({ readonly phase: 'awaiting-callback'; readonly expected: Expected } & Attempt)
  | ({ readonly phase: 'completing' } & Attempt)
  | ({ readonly phase: 'closed' } & Attempt)

export type LoginPhase = LoginState['phase']

interface Attempt {
  readonly server: string
  /** The number of the last login started (0: none yet). */
  readonly attempt: number
}

/** What the callback of the authorisation request in flight must bring back. */
export interface Expected {
  /** The `state` parameter sent with the request. */
  readonly state: string
  /** The issuer the authorisation server's metadata names, else its URL (undefined: unknown). */
  readonly issuer: string | undefined
  /** The issuer comes from the metadata (compared exactly), not from the server's URL (compared without a trailing /). */
  readonly issuerFromMetadata: boolean
  /** The metadata advertises `authorization_response_iss_parameter_supported` (RFC 9207): a callback must carry iss. */
  readonly sendsIss: boolean
}

export type LoginEvent =
  /** A login starts (from the UI, the CLI or a step-up), for `scope` when given. */
  | { readonly kind: 'start'; readonly scope?: string }
  /** The attempt's authorisation URL is ready for the browser. */
  | {
      readonly kind: 'redirected'
      readonly attempt: number
      readonly authorizeUrl: string
      readonly expected: Expected
    }
  /** The attempt needed no browser (the provider already holds tokens): the server is reconnected. */
  | { readonly kind: 'authorized'; readonly attempt: number }
  /** Discovery, registration or the authorisation request failed. */
  | { readonly kind: 'start-failed'; readonly attempt: number; readonly error: McpToolError }
  /** The browser came back to the callback path. */
  | { readonly kind: 'callback'; readonly params: CallbackParams }
  /** Tokens in hand, the server reconnected: how its entry reads now. */
  | {
      readonly kind: 'completed'
      readonly attempt: number
      readonly state: McpState
      readonly error: McpToolError | null
    }
  /** The code could not be exchanged for tokens. */
  | { readonly kind: 'exchange-failed'; readonly attempt: number; readonly error: McpToolError }
  /** The entry is gone (removed, or the registry closed). */
  | { readonly kind: 'close' }

export type LoginEffect =
  /** Discovery, registration where needed, and the authorisation URL, for this attempt. */
  | { readonly kind: 'discover'; readonly attempt: number; readonly scope: string | undefined }
  /** The authorisation URL goes to the browser. */
  | { readonly kind: 'open-browser'; readonly authorizeUrl: string }
  /** The code goes to the token endpoint; then the server is reconnected. */
  | { readonly kind: 'exchange'; readonly attempt: number; readonly code: string }
  /** The server is reconnected with the tokens the provider holds. */
  | { readonly kind: 'reconnect'; readonly attempt: number }
  /** A line of the server's OAuth log about the callback (`status` null: no HTTP status to show). */
  | { readonly kind: 'note'; readonly status: number | null; readonly text: string }
  /** Whoever waits for the login in flight learns how it ended: null when connected, else the error. */
  | { readonly kind: 'settle'; readonly error: McpToolError | null }
  /** The answer the browser's callback request gets. */
  | { readonly kind: 'reply'; readonly ok: boolean; readonly message: string }

export interface LoginStep {
  readonly state: LoginState
  readonly effects: readonly LoginEffect[]
}

/** A transition the login flow never makes: a fault in the code, not in the authorisation server. */
export class LoginTransitionError extends Error {
  override readonly name = 'LoginTransitionError'
  constructor(phase: LoginPhase, event: LoginEvent['kind']) {
    super(`an OAuth login cannot go from ${phase} on ${event}`)
  }
}

export function initialLogin(server: string): LoginState {
  return { phase: 'idle', server, attempt: 0 }
}

type Transition<K extends LoginEvent['kind'], P extends LoginPhase = LoginPhase> = (
  state: Extract<LoginState, { phase: P }>,
  event: Extract<LoginEvent, { kind: K }>
) => LoginStep

type Table = { [P in LoginPhase]: { [K in LoginEvent['kind']]?: Transition<K, P> } }

/** A transition that serves in any phase. */
type Shared<K extends LoginEvent['kind']> = (state: LoginState, event: Extract<LoginEvent, { kind: K }>) => LoginStep

/** The events an attempt reports when it ends. */
type Report = Extract<LoginEvent, { attempt: number }>

const step = (state: LoginState, ...effects: LoginEffect[]): LoginStep => ({ state, effects })
const at = (state: LoginState, phase: 'idle' | 'starting' | 'completing' | 'closed'): LoginState => ({
  phase,
  server: state.server,
  attempt: state.attempt
})
const ended = (state: LoginState, error: McpToolError | null, reply?: { ok: boolean; message: string }) =>
  step(at(state, 'idle'), { kind: 'settle', error }, ...(reply ? [{ kind: 'reply' as const, ...reply }] : []))

/** A new login: whatever an earlier one still reports is ignored from now on. */
const start: Shared<'start'> = (state, { scope }) => {
  const attempt = state.attempt + 1
  return step({ phase: 'starting', server: state.server, attempt }, { kind: 'discover', attempt, scope })
}

/** What an earlier attempt reports: nothing changes; an exchange still in flight answers its callback. */
const stale = (state: LoginState, event: Report): LoginStep =>
  event.kind === 'completed' || event.kind === 'exchange-failed'
    ? step(state, replyOf(state.server, event))
    : step(state)

/** The current attempt's report goes to `transition`; an earlier attempt's changes nothing. */
const current =
  <K extends Report['kind'], P extends LoginPhase>(transition: Transition<K, P>): Transition<K, P> =>
  (state, event) =>
    (event as Report).attempt === state.attempt ? transition(state, event) : stale(state, event as Report)

/** A report only an earlier attempt can make in this phase (the current one made it already, or cannot yet). */
const earlier = (state: LoginState, event: Report): LoginStep => {
  if (event.attempt === state.attempt) throw new LoginTransitionError(state.phase, event.kind)
  return stale(state, event)
}

const notInFlight: Shared<'callback'> = (state) =>
  step(state, {
    kind: 'reply',
    ok: false,
    message: `no login is in flight for ${state.server}: start the login again`
  })

/**
 * The redirect back from the browser: `state` must match the request in flight, and `iss` (RFC 9207) the authorisation
 * server it went to; where that server says it sends `iss`, a callback without one is refused (a mix-up).
 */
const callback: Transition<'callback', 'awaiting-callback'> = (state, { params }) => {
  if (!statesMatch(state.expected.state, params.state))
    return step(
      state,
      { kind: 'note', status: 400, text: 'state does not match the request in flight: refused' },
      {
        kind: 'reply',
        ok: false,
        message: 'the state parameter does not match the login in flight; start the login again'
      }
    )
  const problem = issProblem(state.expected, params.iss)
  if (problem) {
    const done = ended(
      state,
      { code: 'needs_login', message: problem.message },
      { ok: false, message: problem.message }
    )
    return {
      ...done,
      effects: [{ kind: 'note', status: 400, text: `${problem.note}: refused (RFC 9207)` }, ...done.effects]
    }
  }
  if (params.error) {
    const text = `${params.error}${params.errorDescription ? `: ${params.errorDescription}` : ''}`
    const done = ended(
      state,
      { code: 'needs_login', message: `the authorisation server refused: ${params.error}` },
      { ok: false, message: `login refused: ${params.error}` }
    )
    return { ...done, effects: [{ kind: 'note', status: null, text }, ...done.effects] }
  }
  if (!params.code)
    return ended(
      state,
      { code: 'needs_login', message: 'the callback carried no code' },
      { ok: false, message: 'no authorisation code' }
    )
  return step(
    at(state, 'completing'),
    { kind: 'note', status: 200, text: 'code and state received' },
    { kind: 'exchange', attempt: state.attempt, code: params.code }
  )
}

function replyOf(server: string, event: Extract<LoginEvent, { kind: 'completed' | 'exchange-failed' }>) {
  if (event.kind === 'exchange-failed')
    return { kind: 'reply' as const, ok: false, message: `the token exchange failed: ${event.error.message}` }
  return event.state === 'connected'
    ? { kind: 'reply' as const, ok: true, message: `${server} is connected.` }
    : { kind: 'reply' as const, ok: false, message: `${server}: ${event.error?.message ?? event.state}` }
}

const completed: Transition<'completed', 'completing'> = (state, event) => {
  const reply = replyOf(state.server, event)
  return ended(state, event.state === 'connected' ? null : event.error, reply)
}

const close: Shared<'close'> = (state) =>
  state.phase === 'idle' || state.phase === 'closed'
    ? step(at(state, 'closed'))
    : step(at(state, 'closed'), {
        kind: 'settle',
        error: { code: 'needs_login', message: `${state.server} was removed before the login finished` }
      })

const ignored = (state: LoginState): LoginStep => step(state)
const reports = (transition: (state: LoginState, event: Report) => LoginStep) => ({
  redirected: transition,
  authorized: transition,
  'start-failed': transition,
  completed: transition,
  'exchange-failed': transition
})

/** Every allowed transition; a missing entry (or a report `earlier` refuses) is a LoginTransitionError. */
export const LOGIN_TRANSITIONS: Table = {
  idle: { start, ...reports(earlier), callback: notInFlight, close },
  starting: {
    start,
    ...reports(earlier),
    redirected: current((state, { authorizeUrl, expected }) =>
      step(
        { phase: 'awaiting-callback', server: state.server, attempt: state.attempt, expected },
        { kind: 'open-browser', authorizeUrl }
      )
    ),
    authorized: current((state) => step(at(state, 'completing'), { kind: 'reconnect', attempt: state.attempt })),
    'start-failed': current((state, { error }) => ended(state, error)),
    callback: notInFlight,
    close
  },
  'awaiting-callback': { start, ...reports(earlier), callback, close },
  completing: {
    start,
    ...reports(earlier),
    completed: current(completed),
    'exchange-failed': current((state, event) => ended(state, event.error, replyOf(state.server, event))),
    // the callback was taken: one brought again (a reload of the page) finds no login in flight
    callback: notInFlight,
    close
  },
  // the entry is gone: what its attempts still report changes nothing (an exchange still answers its callback)
  closed: { ...reports(stale), callback: notInFlight, close: ignored }
}

export function nextLogin(state: LoginState, event: LoginEvent): LoginStep {
  const transition = (LOGIN_TRANSITIONS[state.phase] as Record<string, Transition<LoginEvent['kind']> | undefined>)[
    event.kind
  ]
  if (!transition) throw new LoginTransitionError(state.phase, event.kind)
  return transition(state, event as never)
}

/**
 * Why a callback's `iss` shows it is not the answer of the authorisation server the login went to, or null: it must
 * equal that server's issuer whenever present, and be present where its metadata advertises it.
 */
function issProblem(expected: Expected, iss: string | null): { message: string; note: string } | null {
  if (iss === null)
    return expected.sendsIss
      ? {
          message: 'the authorisation server sends iss (RFC 9207) and this callback has none',
          note: 'no iss although the authorisation server advertises it'
        }
      : null
  const same = expected.issuerFromMetadata
    ? iss === expected.issuer
    : expected.issuer !== undefined && sameIssuer(iss, expected.issuer)
  return same
    ? null
    : {
        message: 'the callback came from another authorisation server',
        note: `iss ${iss} is not ${expected.issuer ?? 'the issuer of this login (unknown)'}`
      }
}
