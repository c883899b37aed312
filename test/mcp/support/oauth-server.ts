import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Provider from 'oidc-provider'

export interface AuthServerRequest {
  method: string
  path: string
  grantType: string | null
  /** The RFC 8707 resource parameter(s) of the request. */
  resource: string | string[] | null
  clientId: string | null
  status: number
}

export interface RunningAuthServer {
  issuer: string
  requests: AuthServerRequest[]
  /** Paths of the metadata requests, in order, with the status answered (an issuer with a path only). */
  metadataRequests: Array<{ path: string; status: number }>
  /** Token endpoint POSTs, optionally of one grant type. */
  tokenPosts(grantType?: string): AuthServerRequest[]
  stop(): Promise<void>
}

export interface AuthServerOptions {
  /** The protected resource (RFC 8707): tokens are JWTs with this audience. */
  resource: string
  clients?: Array<Record<string, unknown>>
  accessTokenTtlSeconds?: number
  /** Scopes beyond `mcp:tools` the resource knows (step-up). */
  extraScopes?: string[]
  /**
   * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): oidc-provider fetches an HTTPS
   * client_id through this function, which the test points at its own loopback server holding the document.
   */
  fetchClientMetadata?: (url: string) => Promise<Response>
  /** Dynamic registration offered (default true). */
  registration?: boolean
  /** Holds each refresh response this long after the refresh is done (the rotation has happened): widens races. */
  refreshDelayMs?: number
  /**
   * An issuer with a path (`/tenant1`), its metadata served at one place only (the others answer 404): RFC 8414's
   * `/.well-known/oauth-authorization-server/tenant1`, OpenID Connect's `/.well-known/openid-configuration/tenant1`
   * (path inserted) or `/tenant1/.well-known/openid-configuration` (appended, OpenID Connect Discovery 1.0).
   */
  tenant?: { path: string; metadataAt: 'oauth-inserted' | 'oidc-inserted' | 'oidc-appended' }
}

/**
 * A real OAuth 2.1 authorisation server (oidc-provider) on 127.0.0.1: dynamic registration, PKCE required,
 * resource indicators with JWT access tokens, rotating refresh tokens, client credentials, the dev login screens.
 */
export async function startAuthServer(options: AuthServerOptions): Promise<RunningAuthServer> {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${options.tenant?.path ?? ''}`
  const requests: AuthServerRequest[] = []
  const metadataRequests: Array<{ path: string; status: number }> = []
  const provider = new Provider(issuer, {
    clients: options.clients ?? [],
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: options.registration ?? true },
      ...(options.fetchClientMetadata ? { clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } } : {}),
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => options.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: ['mcp:tools', ...(options.extraScopes ?? [])].join(' '),
          audience: options.resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: options.accessTokenTtlSeconds ?? 600
        })
      }
    },
    pkce: { required: () => true },
    ttl: {
      AccessToken: options.accessTokenTtlSeconds ?? 600,
      RefreshToken: 3600,
      Grant: 3600,
      Session: 3600,
      Interaction: 600,
      ClientCredentials: 600
    },
    scopes: ['openid', 'offline_access', 'mcp:tools', ...(options.extraScopes ?? [])],
    ...(options.fetchClientMetadata ? { fetch: (url: URL | string) => options.fetchClientMetadata!(String(url)) } : {}),
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) })
  })
  provider.use(async (ctx, next) => {
    await next()
    const oidc = (
      ctx as unknown as {
        oidc?: { params?: { grant_type?: string; resource?: string | string[] }; client?: { clientId: string } }
      }
    ).oidc
    const params = oidc?.params
    if (options.refreshDelayMs && params?.grant_type === 'refresh_token')
      await new Promise((resolve) => setTimeout(resolve, options.refreshDelayMs))
    requests.push({
      method: ctx.method,
      path: ctx.path,
      grantType: params?.grant_type ?? null,
      resource: params?.resource ?? null,
      clientId: oidc?.client?.clientId ?? null,
      status: ctx.status
    })
  })
  server.on('request', options.tenant ? tenantRoutes(provider, options.tenant, metadataRequests) : provider.callback())
  return {
    issuer,
    requests,
    metadataRequests,
    tokenPosts: (grantType) =>
      requests.filter(
        (request) =>
          request.path === '/token' && request.method === 'POST' && (!grantType || request.grantType === grantType)
      ),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

/**
 * oidc-provider mounted under the tenant's path (its own routes, the path stripped), its metadata document answered
 * only at the one well-known location chosen; every other metadata request is answered 404 and recorded as such.
 */
function tenantRoutes(
  provider: Provider,
  tenant: NonNullable<AuthServerOptions['tenant']>,
  metadataRequests: Array<{ path: string; status: number }>
): (req: IncomingMessage, res: ServerResponse) => void {
  const callback = provider.callback()
  const served = {
    'oauth-inserted': `/.well-known/oauth-authorization-server${tenant.path}`,
    'oidc-inserted': `/.well-known/openid-configuration${tenant.path}`,
    'oidc-appended': `${tenant.path}/.well-known/openid-configuration`
  }[tenant.metadataAt]
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname
    if (path.includes('/.well-known/')) {
      metadataRequests.push({ path, status: path === served ? 200 : 404 })
      if (path !== served) return void res.writeHead(404).end()
      req.url = `${tenant.path}/.well-known/openid-configuration`
    }
    if (!req.url?.startsWith(`${tenant.path}/`)) return void res.writeHead(404).end()
    ;(req as IncomingMessage & { originalUrl?: string }).originalUrl = req.url
    req.url = req.url.slice(tenant.path.length)
    void callback(req, res)
  }
}

export { authorizeInBrowser } from './oidc-browser'
