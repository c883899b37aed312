import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens as SdkTokens
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { McpAuthConfig, OAuthClientInfo, OAuthTokens } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'
import { OPENABLE, openableInBrowser } from './browser-url'
import type { FetchLike } from './oauth-log'

export type AuthorizationCodeConfig = Extract<McpAuthConfig, { mode: 'authorizationCode' }>

/**
 * What the registry remembers about one server's OAuth, across re-applies of its config. `fresh` values came from a
 * flow or a refresh in this process and are never replaced by the config's seed values.
 */
export interface OAuthState {
  tokens?: { value: OAuthTokens; origin: 'seed' | 'fresh' }
  client?: { value: OAuthClientInfo; origin: 'seed' | 'fresh' }
  verifier?: string
  /** The `state` of the authorisation request in flight; the callback must bring it back. */
  pendingState?: string
  discovery?: OAuthDiscoveryState
  authorizeUrl?: string
}

/** Seeds from the config: used when nothing fresher is known; the pre-registered client always when given. */
export function seedOAuthState(state: OAuthState, config: AuthorizationCodeConfig): void {
  if (config.tokens && state.tokens?.origin !== 'fresh') state.tokens = { value: config.tokens, origin: 'seed' }
  if (config.client && state.client?.origin !== 'fresh') state.client = { value: config.client, origin: 'seed' }
}

export function toSdkTokens(tokens: OAuthTokens, now = Date.now()): SdkTokens {
  return {
    access_token: tokens.accessToken,
    token_type: tokens.tokenType ?? 'Bearer',
    ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}),
    ...(tokens.expiresAt !== undefined ? { expires_in: Math.max(0, Math.round(tokens.expiresAt - now / 1000)) } : {}),
    ...(tokens.scope ? { scope: tokens.scope } : {}),
    ...(tokens.issuer ? { issuer: tokens.issuer } : {})
  }
}

/** A refresh response without a refresh_token keeps the previous one. */
export function fromSdkTokens(tokens: SdkTokens, previous: OAuthTokens | undefined, now = Date.now()): OAuthTokens {
  const refreshToken = tokens.refresh_token ?? previous?.refreshToken
  return {
    accessToken: tokens.access_token,
    tokenType: tokens.token_type,
    ...(refreshToken ? { refreshToken } : {}),
    ...(tokens.expires_in !== undefined ? { expiresAt: Math.floor(now / 1000) + Number(tokens.expires_in) } : {}),
    ...(tokens.scope ? { scope: tokens.scope } : {}),
    ...(tokens.issuer ? { issuer: tokens.issuer } : {})
  }
}

/** RFC 7591 metadata kept as returned, with our camelCase id and secret. */
export function fromSdkClient(info: OAuthClientInformationMixed): OAuthClientInfo {
  const { client_id, client_secret, ...rest } = info as OAuthClientInformationMixed & Record<string, unknown>
  return { ...rest, clientId: client_id, ...(client_secret ? { clientSecret: client_secret } : {}) }
}

export function toSdkClient(info: OAuthClientInfo): OAuthClientInformationMixed {
  const { clientId, clientSecret, ...rest } = info
  return {
    ...rest,
    client_id: clientId,
    ...(clientSecret ? { client_secret: clientSecret } : {})
  } as OAuthClientInformationMixed
}

export function statesMatch(expected: string | undefined, received: string | null): boolean {
  if (!expected || !received) return false
  const [a, b] = [Buffer.from(expected), Buffer.from(received)]
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Issuer URLs equal but for trailing slashes (how the SDK and servers may write the same one). */
export function sameIssuer(a: string, b: string): boolean {
  const strip = (url: string) => url.replace(/\/+$/, '')
  return strip(a) === strip(b)
}

export interface ProviderHooks {
  onTokens(tokens: OAuthTokens): Promise<void>
  onClient(client: OAuthClientInfo): Promise<void>
  /** The SDK wants the browser (also behind a background connect, where the registry only records it). */
  onAuthorizeUrl(url: string): void
}

/** The SDK's OAuthClientProvider over the registry's per-server state: PKCE, `state`, issuer-stamped tokens and client. */
export class AuthorizationCodeProvider implements OAuthClientProvider {
  constructor(
    private readonly serverName: string,
    private readonly config: AuthorizationCodeConfig,
    private readonly store: OAuthState,
    readonly redirectUrl: string,
    private readonly hooks: ProviderHooks,
    /** The app's client ID metadata document (an HTTPS URL), used where the authorisation server accepts one. */
    readonly clientMetadataUrl?: string
  ) {
    if (config.resource) {
      const resource = new URL(config.resource)
      this.validateResourceURL = async () => resource
    }
  }

  validateResourceURL?: (serverUrl: string | URL, resource?: string) => Promise<URL | undefined>

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: `Syncscope (${this.serverName})`,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.config.scopes?.length ? { scope: this.config.scopes.join(' ') } : {})
    }
  }

  state(): string {
    this.store.pendingState = randomBytes(24).toString('base64url')
    return this.store.pendingState
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const client = this.store.client?.value
    // A client registered for another redirect URI (an earlier callback port) cannot complete this flow: register anew.
    const uris = (client as { redirect_uris?: unknown } | undefined)?.redirect_uris
    if (client && Array.isArray(uris) && !uris.includes(this.redirectUrl)) return undefined
    // A client id that was a metadata document URL the app no longer publishes (the setting changed or was removed).
    if (client && client.clientId !== this.clientMetadataUrl && /^https:\/\//.test(client.clientId)) return undefined
    return client ? toSdkClient(client) : undefined
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    const client = fromSdkClient(info)
    const previous = this.store.client?.value
    this.store.client = { value: client, origin: 'fresh' }
    if (!previous || previous.clientId !== client.clientId || previous.issuer !== client.issuer)
      await this.hooks.onClient(client)
  }

  /** Only tokens of the authorisation server the resource names now: after a move, the old issuer's tokens stay home. */
  tokens(): SdkTokens | undefined {
    const tokens = this.store.tokens?.value
    if (!tokens) return undefined
    const current = this.store.discovery?.authorizationServerUrl
    if (tokens.issuer && current && !sameIssuer(tokens.issuer, current)) return undefined
    return toSdkTokens(tokens)
  }

  /** Persisted before the SDK goes on, so a restart right after a login or refresh finds the new tokens. */
  async saveTokens(tokens: SdkTokens): Promise<void> {
    const previous = this.store.tokens?.value
    const value = fromSdkTokens(tokens, previous)
    this.store.tokens = { value, origin: 'fresh' }
    if (previous?.accessToken !== value.accessToken) await this.hooks.onTokens(value)
  }

  redirectToAuthorization(url: URL): void {
    if (!openableInBrowser(url.href))
      throw new McpFailure(
        'auth_unavailable',
        `${this.serverName}: the authorisation URL is ${url.origin}…: ${OPENABLE}`
      )
    this.store.authorizeUrl = url.toString()
    this.hooks.onAuthorizeUrl(url.toString())
  }

  saveCodeVerifier(verifier: string): void {
    this.store.verifier = verifier
  }

  codeVerifier(): string {
    if (!this.store.verifier) throw new Error('no authorisation is in flight (the PKCE verifier is gone): log in again')
    return this.store.verifier
  }

  /**
   * Discovery is where an authorisation server names the page the person is sent to: one the browser must not be
   * handed is refused here, with the reason, before anything else happens (registration, the browser).
   */
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    const endpoint = state.authorizationServerMetadata?.authorization_endpoint
    if (endpoint !== undefined && !openableInBrowser(endpoint))
      throw new McpFailure(
        'auth_unavailable',
        `${this.serverName}: the authorisation server's metadata names the authorization_endpoint ${endpoint}: ${OPENABLE}`
      )
    // without metadata the authorisation page is `/authorize` on the server itself
    if (endpoint === undefined && !openableInBrowser(state.authorizationServerUrl))
      throw new McpFailure(
        'auth_unavailable',
        `${this.serverName}: the resource names the authorisation server ${state.authorizationServerUrl}: ${OPENABLE}`
      )
    this.store.discovery = state
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.store.discovery
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'tokens') delete this.store.tokens
    if (scope === 'all' || scope === 'client') delete this.store.client
    if (scope === 'all' || scope === 'verifier') delete this.store.verifier
    if (scope === 'all' || scope === 'discovery') delete this.store.discovery
  }
}

/** The scope of a `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` challenge, else null. */
export function insufficientScope(challenge: string | null): string | null {
  if (!challenge || !/error="?insufficient_scope"?/.test(challenge)) return null
  return /scope="([^"]*)"/.exec(challenge)?.[1] ?? ''
}

/**
 * Watches the resource's answers. The SDK keeps its discovery result forever, so a resource that moved to another
 * authorisation server would be sent the old server's tokens again and again: a 401 from the resource forgets the
 * cached discovery, and the next `auth()` reads the resource's metadata anew (tokens bound to the old issuer are then
 * no longer presented). A 403 insufficient_scope becomes an `insufficient_scope` failure naming the scope, for the
 * registry's step-up (the SDK's own answer, a refresh, can never widen the scope of an authorization-code grant).
 */
export function guardResource(base: FetchLike, resourceUrl: string, store: OAuthState): FetchLike {
  const resource = new URL(resourceUrl)
  return async (input, init) => {
    const response = await base(input, init)
    const url = new URL(String(input))
    if (url.origin !== resource.origin || url.pathname !== resource.pathname) return response
    if (response.status === 401) delete store.discovery
    const scope = response.status === 403 ? insufficientScope(response.headers.get('www-authenticate')) : null
    if (scope !== null) {
      await response.body?.cancel()
      throw new McpFailure('insufficient_scope', `the server needs the scope "${scope}" for this request`, { scope })
    }
    return response
  }
}
