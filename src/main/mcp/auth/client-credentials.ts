import { z } from 'zod'
import type { McpAuthConfig } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'
import { withHeaders } from './headers'
import type { FetchLike } from './oauth-log'

type ClientCredentialsConfig = Extract<McpAuthConfig, { mode: 'clientCredentials' }>

const TokenResponseSchema = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number().optional() })
/** Renew this long before the server's expiry, so a token never expires in flight. */
const EXPIRY_SKEW_MS = 30_000
const DEFAULT_LIFETIME_S = 300

/**
 * The client-credentials grant: one exchange at a time, the token cached until shortly before it expires, and a
 * resource 401 answered by one fresh exchange (shared by every request that saw the same stale token).
 */
export class ClientCredentials {
  private cached: { token: string; expiresAt: number } | null = null
  private exchanging: Promise<string> | null = null

  constructor(
    private readonly config: ClientCredentialsConfig,
    private readonly fetchFn: FetchLike,
    private readonly now: () => number = Date.now
  ) {}

  async token(): Promise<string> {
    if (this.cached && this.cached.expiresAt > this.now()) return this.cached.token
    return this.exchange()
  }

  /** After a 401 with `stale`: exchange again unless another request already did. */
  async renew(stale: string): Promise<string> {
    if (this.cached && this.cached.token !== stale) return this.cached.token
    this.cached = null
    return this.exchange()
  }

  private exchange(): Promise<string> {
    this.exchanging ??= this.request().finally(() => (this.exchanging = null))
    return this.exchanging
  }

  private async request(): Promise<string> {
    const { tokenUrl, clientId, clientSecret, scopes, audience, resource } = this.config
    const body = new URLSearchParams({ grant_type: 'client_credentials' })
    if (scopes?.length) body.set('scope', scopes.join(' '))
    if (audience) body.set('audience', audience)
    if (resource) body.set('resource', resource)
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')
    const response = await this.fetchFn(tokenUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        authorization: `Basic ${basic}`
      },
      body: body.toString()
    })
    const json: unknown = await response.json().catch(() => null)
    if (!response.ok) {
      const error = (json as { error?: string; error_description?: string } | null) ?? {}
      throw new McpFailure(
        'auth_unavailable',
        `the token endpoint ${tokenUrl} refused the client credentials (${response.status}${error.error ? ` ${error.error}` : ''}${error.error_description ? `: ${error.error_description}` : ''})`
      )
    }
    const parsed = TokenResponseSchema.safeParse(json)
    if (!parsed.success)
      throw new McpFailure('auth_unavailable', `the token endpoint ${tokenUrl} returned no access_token`)
    const lifetimeMs = (parsed.data.expires_in ?? DEFAULT_LIFETIME_S) * 1000
    this.cached = {
      token: parsed.data.access_token,
      expiresAt: this.now() + Math.max(lifetimeMs - EXPIRY_SKEW_MS, lifetimeMs / 2)
    }
    return parsed.data.access_token
  }

  /** A fetch that carries the bearer token and answers a 401 with one re-exchange and one retry. */
  fetch(base: FetchLike): FetchLike {
    return async (input, init) => {
      const token = await this.token()
      const response = await base(input, withHeaders(init, { authorization: `Bearer ${token}` }))
      if (response.status !== 401) return response
      await response.body?.cancel()
      const fresh = await this.renew(token)
      return base(input, withHeaders(init, { authorization: `Bearer ${fresh}` }))
    }
  }
}
