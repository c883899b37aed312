import { startAuthServer, type AuthServerOptions, type RunningAuthServer } from './oauth-server'
import { startMcpHttpServer, type Gate, type RunningMcpHttpServer } from './mcp-http-server'

export interface ProtectedServer {
  as: RunningAuthServer
  rs: RunningMcpHttpServer
  /** The resource names another authorisation server from now on (as after a move). */
  moveTo(next: RunningAuthServer): void
}

/**
 * An MCP server built with the SDK behind a fresh oidc-provider whose tokens are minted for it; both are stopped by
 * the functions pushed onto `stops`.
 */
export async function startProtectedServer(
  stops: Array<() => Promise<void>>,
  gate: Omit<Extract<Gate, { kind: 'oauth' }>, 'kind' | 'issuer'> = {},
  as: Omit<AuthServerOptions, 'resource'> = {}
): Promise<ProtectedServer> {
  let issuer = ''
  const rs = await startMcpHttpServer({ kind: 'oauth', issuer: () => issuer, ...gate })
  stops.push(rs.stop)
  const authServer = await startAuthServer({ resource: rs.url, ...as })
  stops.push(authServer.stop)
  issuer = authServer.issuer
  return { as: authServer, rs, moveTo: (next) => void (issuer = next.issuer) }
}
