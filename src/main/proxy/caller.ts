/** Who may do what: the caller's token, roles and the claims a row filter binds. */
import { Refusal } from './refusal'
import type { Exchange, ProxyRuntime } from './runtime'
import { AuthError, bearerToken, type Caller } from './tokens'

export async function authenticate(runtime: ProxyRuntime, request: Request, exchange: Exchange): Promise<Caller> {
  const token = bearerToken(request, runtime.loaded.config.auth)
  if (token === null) throw new AuthError('missing_credentials', 'send an access token: Authorization: Bearer <token>')
  const caller = await runtime.tokens.verifyAccessToken(token)
  exchange.subject = caller.subject
  return caller
}

export function checkRoles(caller: Caller, roles: string[] | undefined, what: string): void {
  if (roles && !roles.some((role) => caller.roles.includes(role))) {
    throw new Refusal(
      403,
      'forbidden_role',
      `${what} needs one of the roles ${roles.join(', ')}; ${caller.subject} has ${caller.roles.join(', ') || 'none'}`
    )
  }
}

export const isPrivileged = (caller: Caller, policy: { privilegedRoles?: string[] }) =>
  (policy.privilegedRoles ?? []).some((role) => caller.roles.includes(role))

/** The caller's claim values for a filter's `$1`, `$2`, …; a missing claim is a 403: the caller cannot be scoped. */
export function bindClaims(caller: Caller, claims: string[]): Record<string, string> {
  return Object.fromEntries(
    claims.map((claim, index) => {
      const value = caller.claims[claim]
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
        throw new Refusal(
          403,
          'missing_claim',
          `the caller's token has no ${claim} claim, which this shape's row filter needs`
        )
      }
      return [String(index + 1), String(value)]
    })
  )
}
