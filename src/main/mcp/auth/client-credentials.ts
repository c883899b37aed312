import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import { z } from 'zod'
import type { McpAuthConfig } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'
import { assertionKey, clientAssertion, CLIENT_ASSERTION_TYPE, type AssertionKey } from './client-assertion'
import { withHeaders } from './headers'
import type { FetchLike } from './oauth-log'
import type { ResourceChallenge } from './resource-challenge'
import { discoverTokenEndpoint, type TokenEndpoint } from './token-endpoint'

type ClientCredentialsConfig = Extract<McpAuthConfig, { mode: 'clientCredentials' }>

const TokenResponseSchema = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number().optional() })
/** Renew this long before the server's expiry, so a token never expires in flight. */
const EXPIRY_SKEW_MS = 30_000
const DEFAULT_LIFETIME_S = 300

/**
 * The client-credentials grant: one exchange at a time, the token cached until shortly before it expires, and a
 * resource 401 answered by one fresh exchange (shared by every request that saw the same stale token). The client
 * authenticates with its secret (client_secret_basic) or with an assertion its private key signs (private_key_jwt,
 * RFC 7523); without a configured tokenUrl the endpoint is discovered from the server, starting at its first 401.
 */
export class ClientCredentials {
  private cached: { token: string; expiresAt: number } | null = null
  private exchanging: Promise<string> | null = null
  private endpoint: Promise<TokenEndpoint> | null = null
  private readonly key: AssertionKey | null

  constructor(
    private readonly config: ClientCredentialsConfig,
    private readonly serverUrl: string,
    private readonly fetchFn: FetchLike,
    private readonly now: () => number = Date.now
  ) {
    this.key = config.privateKey ? assertionKey(config.privateKey, config.signingAlgorithm) : null
    if (config.tokenUrl)
      this.endpoint = Promise.resolve({ url: config.tokenUrl, audience: config.tokenUrl, resource: null })
  }

  async token(challenge: ResourceChallenge = {}): Promise<string> {
    if (this.cached && this.cached.expiresAt > this.now()) return this.cached.token
    return this.exchange(challenge)
  }

  /** After a 401 with `stale`: exchange again unless another request already did. */
  async renew(stale: string): Promise<string> {
    if (this.cached && this.cached.token !== stale) return this.cached.token
    this.cached = null
    return this.exchange({})
  }

  private exchange(challenge: ResourceChallenge): Promise<string> {
    this.exchanging ??= this.request(challenge).finally(() => (this.exchanging = null))
    return this.exchanging
  }

  private tokenEndpoint(challenge: ResourceChallenge): Promise<TokenEndpoint> {
    this.endpoint ??= discoverTokenEndpoint(this.serverUrl, challenge, this.fetchFn).catch((error: unknown) => {
      this.endpoint = null
      throw error
    })
    return this.endpoint
  }

  /** The token request's form and headers: the grant, then the client's proof (an assertion, or Basic). */
  private async tokenRequest(endpoint: TokenEndpoint, scope: string | undefined): Promise<RequestInit> {
    const { clientId, clientSecret, audience, resource } = this.config
    const body = new URLSearchParams({ grant_type: 'client_credentials' })
    if (scope) body.set('scope', scope)
    if (audience) body.set('audience', audience)
    if (resource ?? endpoint.resource) body.set('resource', resource ?? endpoint.resource!)
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json'
    }
    if (this.key) {
      body.set('client_id', clientId)
      body.set('client_assertion_type', CLIENT_ASSERTION_TYPE)
      body.set('client_assertion', await clientAssertion(this.key, clientId, endpoint.audience, this.now()))
    } else {
      const basic = `${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret ?? '')}`
      headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`
    }
    return { method: 'POST', headers, body: body.toString() }
  }

  private async request(challenge: ResourceChallenge): Promise<string> {
    const endpoint = await this.tokenEndpoint(challenge)
    const scope = this.config.scopes?.length ? this.config.scopes.join(' ') : challenge.scope
    const response = await this.fetchFn(endpoint.url, await this.tokenRequest(endpoint, scope))
    const json: unknown = await response.json().catch(() => null)
    if (!response.ok) {
      const error = (json as { error?: string; error_description?: string } | null) ?? {}
      throw new McpFailure(
        'auth_unavailable',
        `the token endpoint ${endpoint.url} refused the client credentials (${response.status}${error.error ? ` ${error.error}` : ''}${error.error_description ? `: ${error.error_description}` : ''})`
      )
    }
    const parsed = TokenResponseSchema.safeParse(json)
    if (!parsed.success)
      throw new McpFailure('auth_unavailable', `the token endpoint ${endpoint.url} returned no access_token`)
    const lifetimeMs = (parsed.data.expires_in ?? DEFAULT_LIFETIME_S) * 1000
    this.cached = {
      token: parsed.data.access_token,
      expiresAt: this.now() + Math.max(lifetimeMs - EXPIRY_SKEW_MS, lifetimeMs / 2)
    }
    return parsed.data.access_token
  }

  /**
   * A fetch that carries the bearer token and answers a 401 with one exchange and one retry. Before the token
   * endpoint is known (no tokenUrl), the first request goes without a token: its 401 says where to look.
   */
  fetch(base: FetchLike): FetchLike {
    return async (input, init) => {
      const token = this.cached || this.endpoint ? await this.token() : null
      const response = await base(input, token ? withHeaders(init, { authorization: `Bearer ${token}` }) : init)
      if (response.status !== 401) return response
      const challenge = extractWWWAuthenticateParams(response)
      await response.body?.cancel()
      const fresh = token ? await this.renew(token) : await this.token(challenge)
      return base(input, withHeaders(init, { authorization: `Bearer ${fresh}` }))
    }
  }
}
