import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { McpHttpServerConfig } from '../../../shared/contract/mcp-config'
import type { HttpAuthWiring } from '../connection/http'
import type { Entry } from '../entry'
import { guardResource, type AuthorizationCodeConfig, type OAuthState } from './authorization-code'
import { ClientCredentials } from './client-credentials'
import { apiKeyHeader, fetchWithHeaders } from './headers'
import type { FetchLike, OAuthLog } from './oauth-log'
import { coordinatedRefresh, type TokenRecord } from './refresh-coordinator'
import { resendWithCurrentToken } from './replaced-token'

/** What the auth of one HTTP server's requests is made of. */
export interface RequestAuthParts {
  /** The fetch under every request, recorded in the server's OAuth log. */
  fetch: FetchLike
  log: OAuthLog
  state: OAuthState
  /** The authorization-code grant's provider (the login flow makes it: it owns the callback). */
  provider: (config: AuthorizationCodeConfig) => Promise<OAuthClientProvider>
  /** The persisted tokens and their cross-process lock, where the host keeps them. */
  tokenRecord: () => TokenRecord | null
}

/**
 * The fetch an HTTP server's requests go through: its headers, and the auth its mode adds (an API key header, the
 * client-credentials grant, or the authorization-code grant's tokens, refreshed in step with other processes).
 */
export async function requestAuth(
  entry: Entry,
  config: McpHttpServerConfig,
  parts: RequestAuthParts
): Promise<HttpAuthWiring> {
  const { log, state } = parts
  const base = fetchWithHeaders(parts.fetch, config.headers ?? {})
  const { auth } = config
  switch (auth.mode) {
    case 'none':
      return { fetch: base, canConnect: () => true }
    case 'apiKey':
      return { fetch: fetchWithHeaders(base, apiKeyHeader(auth)), canConnect: () => true }
    case 'clientCredentials':
      return { fetch: new ClientCredentials(auth, config.url, parts.fetch).fetch(base), canConnect: () => true }
    case 'authorizationCode': {
      const provider = await parts.provider(auth)
      entry.oauth = { provider, config: auth }
      /** Access tokens a request was answered 401 with: a refresh is needed only when the one in use is among them. */
      const refused = new Set<string>()
      const refreshing = coordinatedRefresh(base, {
        record: auth.oauthProviderRef ? null : parts.tokenRecord(),
        save: (tokens) => Promise.resolve(provider.saveTokens(tokens)),
        issuer: () => state.discovery?.authorizationServerUrl ?? state.tokens?.value.issuer,
        note: (url, text) => log.add('refresh', 'POST', url, null, text),
        refused: (accessToken) => refused.has(accessToken)
      })
      return {
        fetch: guardResource(
          resendWithCurrentToken(refreshing.fetch, {
            current: () => state.tokens?.value.accessToken,
            refusedWith: (accessToken) => {
              // a few are enough (the token in use and the ones before it); a server refused for months stays small
              if (refused.size >= 64) refused.clear()
              refused.add(accessToken)
            },
            settled: refreshing.settled
          }),
          config.url,
          state
        ),
        authProvider: provider,
        canConnect: () => Boolean(state.tokens) || Boolean(auth.oauthProviderRef)
      }
    }
  }
}
