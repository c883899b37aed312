import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { McpHttpServerConfig, OAuthClientInfo, OAuthTokens } from '../../../shared/contract/mcp-config'
import type { McpToolError, OAuthExchange, TokenStatus } from '../../../shared/contract/mcp'
import { CLIENT_INFO } from '../connection/connection'
import type { HttpAuthWiring } from '../connection/http'
import type { Entry, EntryBook, RegistryOptions } from '../entry'
import { McpFailure, toToolError } from '../errors'
import { tokenStatus } from '../mask'
import {
  AuthorizationCodeProvider,
  seedOAuthState,
  type AuthorizationCodeConfig,
  type OAuthState
} from './authorization-code'
import { CallbackListeners, type CallbackParams } from './callback-server'
import { fetchWithHeaders } from './headers'
import { OAuthLog, type FetchLike } from './oauth-log'
import {
  initialLogin,
  nextLogin,
  type Expected,
  type LoginEffect,
  type LoginEvent,
  type LoginState
} from './login-machine'
import { requestAuth } from './request-auth'
import { resourceChallenge } from './resource-challenge'

/** How long a tool call that needs a wider scope waits for the person to finish the login in the browser. */
const STEP_UP_WAIT_MS = 300_000

/** One server's login flow: its machine's state, and whoever waits for the login in flight to end. */
interface Flow {
  state: LoginState
  waiters: Array<(error: McpToolError | null) => void>
}

type Reply = Extract<LoginEffect, { kind: 'reply' }>

/**
 * The OAuth side of the registry's HTTP servers: each request's auth (API key, client credentials, the
 * authorization-code grant's tokens), the authorization-code login in the browser (its machine: login-machine.ts),
 * its callback, step-up and logout.
 */
export class Logins {
  private readonly states = new Map<string, OAuthState>()
  private readonly logs = new Map<string, OAuthLog>()
  private readonly flows = new Map<string, Flow>()
  private readonly callbacks = new CallbackListeners((server, params) => this.completeLogin(server, params))
  private readonly fetchFn: FetchLike
  /** The app's client ID metadata document URL in force (null: none). */
  clientMetadataUrl: string | null

  constructor(
    private readonly book: EntryBook,
    private readonly options: RegistryOptions
  ) {
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init))
    this.clientMetadataUrl = options.clientMetadataUrl ?? null
  }

  /** The config's tokens and client, where nothing fresher is known. */
  seed(name: string, config: AuthorizationCodeConfig): void {
    seedOAuthState(this.state(name), config)
  }

  tokenStatus(name: string): TokenStatus {
    const oauth = this.states.get(name)
    return tokenStatus(oauth?.tokens?.value, oauth?.client?.value.clientId)
  }

  /** The entry is gone: so are its OAuth state, its log and its login flow (whoever waits for it learns so). */
  forget(name: string): void {
    const flow = this.flows.get(name)
    if (flow) this.send(name, flow, { kind: 'close' })
    this.flows.delete(name)
    this.states.delete(name)
    this.logs.delete(name)
  }

  oauthExchanges(name: string): OAuthExchange[] {
    return this.logs.get(name)?.list() ?? []
  }

  /**
   * Step-up after a 403 insufficient_scope: a new authorisation for the scopes held plus the ones asked for (the
   * browser opens), waited for up to STEP_UP_WAIT_MS; the caller then retries once.
   */
  async stepUp(name: string, asked: string): Promise<void> {
    const { entry, state } = this.oauthEntry(name)
    const scope = [
      ...new Set(
        [
          ...(entry.oauth?.config?.scopes ?? []),
          ...(state.tokens?.value.scope ?? '').split(' '),
          ...asked.split(' ')
        ].filter(Boolean)
      )
    ].join(' ')
    this.log(name).add(
      'resource',
      'POST',
      (entry.config as { url: string }).url,
      403,
      `insufficient_scope: re-authorising with "${scope}"`
    )
    // a host that cannot open a browser (the CLI with --no-open, a launcher) says so at once rather than wait
    if (!this.options.openAuthorizeUrl)
      throw new McpFailure(
        'insufficient_scope',
        `${name} needs the scope "${scope}" for this request, and no browser is opened here to log in`,
        { scope }
      )
    const done = this.waitForLogin(name)
    try {
      await this.login(name, { scope })
    } catch (error) {
      throw new McpFailure(
        'insufficient_scope',
        `${name} needs the scope "${scope}", which the authorisation server refused: ${(error as Error).message}`,
        { scope }
      )
    }
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<McpToolError>((resolve) => {
      timer = setTimeout(
        () => resolve({ code: 'needs_login', message: `the login did not finish within ${STEP_UP_WAIT_MS / 1000} s` }),
        STEP_UP_WAIT_MS
      )
    })
    const error = await Promise.race([done, expired]).finally(() => clearTimeout(timer))
    if (error)
      throw new McpFailure(
        error.code === 'needs_login' ? 'insufficient_scope' : error.code,
        `${name} needs the scope "${scope}": ${error.message}`,
        { scope }
      )
  }

  /**
   * Starts the authorization-code flow: discovery (where the resource's 401 names its metadata, else the well-known
   * paths), registration when needed, and the authorisation URL (opened). The scope: the one asked for (a step-up),
   * else the configured scopes, else the 401's, else what the metadata lists.
   */
  async login(name: string, options: { scope?: string } = {}): Promise<{ authorizeUrl: string }> {
    const { entry, state } = this.oauthEntry(name)
    const flow = this.flow(name)
    const [discover] = this.send(name, flow, { kind: 'start', ...(options.scope ? { scope: options.scope } : {}) })
    if (discover?.kind !== 'discover') throw new Error('an OAuth login started without discovery')
    const { attempt } = discover
    let report: LoginEvent
    try {
      const authorizeUrl = await this.discover(entry, state, discover.scope)
      report = authorizeUrl
        ? { kind: 'redirected', attempt, authorizeUrl, expected: expectedCallback(state) }
        : { kind: 'authorized', attempt }
    } catch (error) {
      this.send(name, flow, { kind: 'start-failed', attempt, error: toToolError(error, 'auth_unavailable') })
      throw error
    }
    for (const effect of this.send(name, flow, report)) {
      if (effect.kind === 'open-browser') {
        this.log(name).add('authorization', 'GET', effect.authorizeUrl, null, 'opened in the browser')
        await Promise.resolve(this.options.openAuthorizeUrl?.(effect.authorizeUrl, name)).catch(() => {})
      }
      if (effect.kind === 'reconnect') await this.complete(name, flow, attempt, () => this.book.reconnect(name), true)
    }
    return { authorizeUrl: report.kind === 'redirected' ? report.authorizeUrl : '' }
  }

  /**
   * Discovery, registration where needed, and the authorisation request: its URL, or null where the provider holds
   * tokens already (no browser needed). A fresh authorisation: the tokens held are forgotten, and a client registered
   * for a narrower scope than the one asked for is registered anew.
   */
  private async discover(entry: Entry, state: OAuthState, asked: string | undefined): Promise<string | null> {
    const name = entry.name
    const log = this.log(name)
    delete state.tokens
    delete state.authorizeUrl
    delete state.discovery
    const config = entry.oauth?.config
    const { url, headers } = entry.config as McpHttpServerConfig
    // A registered client is limited to the scope it registered with (it records it): register anew for a wider one.
    const registered = (state.client?.value as { scope?: unknown } | undefined)?.scope
    if (asked && typeof registered === 'string' && !covers(registered, asked)) delete state.client
    const challenge = await resourceChallenge(
      url,
      fetchWithHeaders(log.recording(this.fetchFn), headers ?? {}),
      CLIENT_INFO
    )
    const scope = asked ?? (config?.scopes?.length ? config.scopes.join(' ') : challenge.scope)
    const result = await auth(entry.oauth!.provider, {
      serverUrl: url,
      ...(scope ? { scope } : {}),
      ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}),
      fetchFn: log.recording(this.fetchFn)
    })
    if (result === 'AUTHORIZED') return null
    if (!state.authorizeUrl)
      throw new McpFailure('auth_unavailable', `${name}: the authorisation server gave no authorisation URL`)
    return state.authorizeUrl
  }

  /** Resolves when the login in flight finishes: null when connected, else its error. */
  waitForLogin(name: string): Promise<McpToolError | null> {
    return new Promise((resolve) => this.flow(name).waiters.push(resolve))
  }

  /**
   * The redirect back from the browser to the callback path of `name`, taken only for the login in flight (its
   * `state`, its authorisation server's `iss`: see login-machine.ts); its code is exchanged for tokens.
   */
  async completeLogin(name: string, params: CallbackParams): Promise<{ ok: boolean; message: string }> {
    const flow = this.flows.get(name)
    const event = { kind: 'callback', params } as const
    if (!flow) return replyIn(nextLogin(initialLogin(name), event).effects)
    let reply: Reply | undefined
    for (const effect of this.send(name, flow, event)) {
      if (effect.kind === 'reply') reply = effect
      if (effect.kind === 'exchange')
        reply = await this.complete(name, flow, effect.attempt, async () => {
          const { entry } = this.oauthEntry(name)
          await auth(entry.oauth!.provider, {
            serverUrl: (entry.config as { url: string }).url,
            authorizationCode: effect.code,
            fetchFn: this.log(name).recording(this.fetchFn)
          })
          await this.book.reconnect(name)
        })
    }
    return replyIn(reply ? [reply] : [])
  }

  /**
   * The end of an attempt: `work` (the token exchange, the reconnect), then how the entry reads, to the machine. With
   * `rethrow`, a failure of `work` also goes to the caller.
   */
  private async complete(
    name: string,
    flow: Flow,
    attempt: number,
    work: () => Promise<unknown>,
    rethrow = false
  ): Promise<Reply | undefined> {
    try {
      await work()
    } catch (error) {
      const effects = this.send(name, flow, {
        kind: 'exchange-failed',
        attempt,
        error: toToolError(error, 'auth_unavailable')
      })
      if (rethrow) throw error
      return effects.find((effect): effect is Reply => effect.kind === 'reply')
    }
    const { state, error } = this.book.describe(name)
    const effects = this.send(name, flow, { kind: 'completed', attempt, state, error })
    return effects.find((effect): effect is Reply => effect.kind === 'reply')
  }

  /** Applies one event to the flow: notes go to the log, waiters hear how it ended; the other effects are returned. */
  private send(name: string, flow: Flow, event: LoginEvent): LoginEffect[] {
    const { state, effects } = nextLogin(flow.state, event)
    flow.state = state
    return effects.filter((effect) => {
      if (effect.kind === 'note')
        this.log(name).add('callback', 'GET', `oauth callback for ${name}`, effect.status, effect.text)
      else if (effect.kind === 'settle') for (const resolve of flow.waiters.splice(0)) resolve(effect.error)
      else return true
      return false
    })
  }

  private flow(name: string): Flow {
    let flow = this.flows.get(name)
    if (!flow) this.flows.set(name, (flow = { state: initialLogin(name), waiters: [] }))
    return flow
  }

  /** Forgets the tokens (the host deletes persisted ones); the entry goes back to needs-login. */
  async logout(name: string): Promise<void> {
    const { entry, state } = this.oauthEntry(name)
    delete state.tokens
    await this.options.onLogout?.(name)
    await entry.connection?.reset()
    await this.book.warm(name, true)
  }

  /** The fetch an HTTP server's requests go through (see request-auth.ts). */
  wiring(entry: Entry, config: McpHttpServerConfig): Promise<HttpAuthWiring> {
    const { name } = config
    const log = this.log(name)
    return requestAuth(entry, config, {
      fetch: log.recording(this.fetchFn),
      log,
      state: this.state(name),
      provider: (auth) => this.authorizationProvider(name, auth),
      tokenRecord: () => this.options.tokenRecord?.(name) ?? null
    })
  }

  async close(): Promise<void> {
    for (const name of [...this.flows.keys()]) this.forget(name)
    await this.callbacks.close()
  }

  private oauthEntry(name: string): { entry: Entry; state: OAuthState } {
    const entry = this.book.entry(name)
    if (entry.config?.transport !== 'http' || entry.config.auth.mode !== 'authorizationCode' || !entry.oauth) {
      throw new McpFailure('auth_unavailable', `${name} does not use the authorizationCode grant`)
    }
    return { entry, state: this.state(name) }
  }

  private state(name: string): OAuthState {
    let state = this.states.get(name)
    if (!state) this.states.set(name, (state = {}))
    return state
  }

  private log(name: string): OAuthLog {
    let log = this.logs.get(name)
    if (!log) this.logs.set(name, (log = new OAuthLog((exchange) => this.options.onOAuthExchange?.(name, exchange))))
    return log
  }

  private async authorizationProvider(name: string, config: AuthorizationCodeConfig): Promise<OAuthClientProvider> {
    if (config.oauthProviderRef) {
      const provider = this.options.oauthProviders?.get(config.oauthProviderRef)
      if (!provider)
        throw new McpFailure(
          'auth_unavailable',
          `oauthProviderRef '${config.oauthProviderRef}' names no provider the host registered`
        )
      return provider
    }
    const state = this.state(name)
    const redirectUri =
      config.redirectUri ?? (await this.callbacks.redirectUri(name, registeredPort(state.client?.value)))
    if (config.redirectUri) await this.callbacks.ensureFor(config.redirectUri)
    const entryConfig = () => (this.book.has(name) ? this.book.entry(name).oauth?.config : undefined) ?? config
    return new AuthorizationCodeProvider(
      name,
      config,
      state,
      redirectUri,
      {
        onTokens: (tokens: OAuthTokens) => Promise.resolve(entryConfig().onTokensChanged?.(tokens)).catch(() => {}),
        onClient: (client: OAuthClientInfo) =>
          Promise.resolve(entryConfig().onClientRegistered?.(client)).catch(() => {}),
        onAuthorizeUrl: () => this.book.changed([name])
      },
      this.clientMetadataUrl ?? undefined
    )
  }
}

/** What the callback of the authorisation request just built must bring back: its `state`, its issuer's `iss`. */
function expectedCallback(state: OAuthState): Expected {
  const metadata = state.discovery?.authorizationServerMetadata as
    { issuer?: string; authorization_response_iss_parameter_supported?: unknown } | undefined
  return {
    state: state.pendingState ?? '',
    issuer: metadata?.issuer ?? state.discovery?.authorizationServerUrl,
    issuerFromMetadata: Boolean(metadata?.issuer),
    sendsIss: metadata?.authorization_response_iss_parameter_supported === true
  }
}

function replyIn(effects: readonly LoginEffect[]): { ok: boolean; message: string } {
  const reply = effects.find((effect): effect is Reply => effect.kind === 'reply')
  if (!reply) throw new Error('an OAuth callback was neither answered nor refused')
  return { ok: reply.ok, message: reply.message }
}

function covers(granted: string, wanted: string): boolean {
  const held = new Set(granted.split(' '))
  return wanted.split(' ').every((scope) => !scope || held.has(scope))
}

/** The loopback port a registered client's redirect URI uses, so the next login can reuse the registration. */
function registeredPort(client: OAuthClientInfo | undefined): number | undefined {
  const uris = (client as { redirect_uris?: unknown } | undefined)?.redirect_uris
  const first = Array.isArray(uris)
    ? uris.find((uri): uri is string => typeof uri === 'string' && uri.startsWith('http://127.0.0.1:'))
    : undefined
  return first ? Number(new URL(first).port) : undefined
}
