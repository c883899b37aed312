import { decodeJwt } from 'jose'
import { RpcError } from '../../shared/contract/errors'
import type { ProxyService } from './service'

/** How long a token handed to the renderer lives at most: the workbench asks again before it expires, or on a 401. */
export const UI_TOKEN_LIFETIME_SECONDS = 120

/**
 * A short-lived access token of one of the proxy config's test users, for a shape client in the renderer to call the
 * proxy as them. Only users the config lists: identities of an external provider (JWKS) are never minted here.
 */
export async function userAccessToken(
  service: ProxyService,
  userId: string
): Promise<{ token: string; expiresAt: string }> {
  const { config } = service.config.loaded
  const user = config.users.find((candidate) => candidate.id === userId)
  if (!user)
    throw new RpcError(
      'unknown_user',
      `no test user ${JSON.stringify(userId)} in the proxy config (${service.config.path}): the proxy mints tokens only for the users listed there`
    )
  const lifetimeSeconds = Math.min(UI_TOKEN_LIFETIME_SECONDS, config.auth.accessTokenLifetimeSeconds)
  const token = await service.tokens().mintAccessToken(user, lifetimeSeconds)
  return { token, expiresAt: new Date((decodeJwt(token).exp ?? 0) * 1000).toISOString() }
}
