import { createRemoteJWKSet, decodeJwt, errors, jwtVerify, SignJWT, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import type { ProxyConfig, ProxyUser } from './config'
import type { SigningKeys } from './signing-keys'
import { PinnedShapeSchema, type PinnedShape } from './shape-definition'

/** Who is calling, as their verified token says. */
export interface Caller {
  subject: string
  roles: string[]
  claims: JWTPayload
}

/** A refusal to authenticate: always a 401, with a code and message that say why. */
export class AuthError extends Error {
  override readonly name = 'AuthError'
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message)
  }
}

/** Shape tokens are only accepted by the token-checking proxy, access tokens only elsewhere. */
export const shapeAudience = (config: ProxyConfig) => `${config.auth.audience}/shapes`

/** The bearer token of a request: the Authorization header first, then the configured cookie. */
export function bearerToken(request: Request, auth: ProxyConfig['auth']): string | null {
  if (auth.header) {
    const header = request.headers.get('authorization')
    if (header !== null) {
      const match = /^Bearer[ \t]+([^\s,]+)[ \t]*$/i.exec(header)
      if (!match?.[1])
        throw new AuthError('malformed_authorization', 'the Authorization header must be `Bearer <token>`')
      return match[1]
    }
  }
  if (auth.cookie) {
    for (const part of (request.headers.get('cookie') ?? '').split(';')) {
      const [name, ...value] = part.trim().split('=')
      if (name === auth.cookie && value.length > 0) return value.join('=')
    }
  }
  return null
}

function describeFailure(error: unknown): AuthError {
  if (error instanceof AuthError) return error
  if (error instanceof errors.JWTExpired) return new AuthError('token_expired', 'the token has expired')
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf')
      return new AuthError('token_not_yet_valid', 'the token is not valid yet (nbf is in the future)')
    return new AuthError('invalid_token', `the token's ${error.claim} claim is not accepted (${error.reason})`)
  }
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return new AuthError('invalid_signature', 'the token signature does not verify')
  if (error instanceof errors.JOSEAlgNotAllowed)
    return new AuthError('invalid_token', 'the token is signed with an algorithm this proxy does not accept')
  if (error instanceof errors.JWKSNoMatchingKey)
    return new AuthError('invalid_signature', 'no key of the identity provider matches the token')
  if (error instanceof errors.JOSEError)
    return new AuthError('invalid_token', `the token is not valid: ${error.message}`)
  throw error
}

function rolesOf(payload: JWTPayload, claim: string): string[] {
  const value = payload[claim]
  if (Array.isArray(value)) return value.filter((role): role is string => typeof role === 'string')
  if (typeof value === 'string') return value.split(/\s+/).filter(Boolean)
  return []
}

export interface TokenServiceOptions {
  config: ProxyConfig
  keys: SigningKeys
}

/** Mints and verifies the app's tokens (access tokens of local users, shape tokens) and verifies external ones. */
export class TokenService {
  private readonly remoteKeys: JWTVerifyGetKey | null

  constructor(private readonly options: TokenServiceOptions) {
    const jwks = options.config.auth.jwks
    this.remoteKeys = jwks
      ? createRemoteJWKSet(new URL(jwks.url), { timeoutDuration: 5000, cooldownDuration: 1000 })
      : null
  }

  private get config() {
    return this.options.config
  }

  private async sign(payload: JWTPayload, subject: string, audience: string, lifetimeSeconds: number): Promise<string> {
    const key = await this.options.keys.key(this.config.gatekeeper.algorithm)
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT(payload)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setSubject(subject)
      .setIssuer(this.config.auth.issuer)
      .setAudience(audience)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + lifetimeSeconds)
      .sign(key.privateKey)
  }

  /** An access token for a configured test user, as a real identity provider would issue it. */
  mintAccessToken(user: ProxyUser, lifetimeSeconds = this.config.auth.accessTokenLifetimeSeconds): Promise<string> {
    return this.sign(
      { ...user.claims, name: user.name, [this.config.auth.rolesClaim]: user.roles },
      user.id,
      this.config.auth.audience,
      lifetimeSeconds
    )
  }

  /** A short-lived token whose `shape` claim pins the one shape the gatekeeper authorised. */
  mintShapeToken(caller: Caller, shape: PinnedShape): Promise<string> {
    return this.sign(
      { shape, [this.config.auth.rolesClaim]: caller.roles },
      caller.subject,
      shapeAudience(this.config),
      this.config.gatekeeper.lifetimeSeconds
    )
  }

  private async verifyLocal(token: string, audience: string): Promise<JWTPayload> {
    const key = await this.options.keys.key(this.config.gatekeeper.algorithm)
    const { payload } = await jwtVerify(token, key.verifyKey, {
      issuer: this.config.auth.issuer,
      audience,
      algorithms: [key.alg]
    })
    return payload
  }

  /** Verifies an access token, local or from the configured identity provider; throws AuthError. */
  async verifyAccessToken(token: string): Promise<Caller> {
    try {
      const jwks = this.config.auth.jwks
      const issuer = decodeJwt(token).iss
      let payload: JWTPayload
      if (issuer === this.config.auth.issuer) payload = await this.verifyLocal(token, this.config.auth.audience)
      else if (jwks && this.remoteKeys && issuer === jwks.issuer) {
        payload = (
          await jwtVerify(token, this.remoteKeys, {
            issuer: jwks.issuer,
            audience: jwks.audience,
            algorithms: jwks.algorithms ?? ['RS256', 'ES256', 'EdDSA', 'PS256']
          })
        ).payload
      } else
        throw new AuthError(
          'untrusted_issuer',
          `tokens from issuer ${JSON.stringify(issuer ?? null)} are not accepted here`
        )
      if (!payload.sub) throw new AuthError('invalid_token', 'the token has no sub claim')
      return { subject: payload.sub, roles: rolesOf(payload, this.config.auth.rolesClaim), claims: payload }
    } catch (error) {
      throw describeFailure(error)
    }
  }

  /** Verifies a shape token and reads its shape claim; throws AuthError. */
  async verifyShapeToken(token: string): Promise<{ caller: Caller; shape: PinnedShape }> {
    try {
      const payload = await this.verifyLocal(token, shapeAudience(this.config))
      const shape = PinnedShapeSchema.safeParse(payload.shape)
      if (!shape.success) throw new AuthError('invalid_token', 'the token has no valid shape claim')
      return {
        caller: { subject: payload.sub ?? '', roles: rolesOf(payload, this.config.auth.rolesClaim), claims: payload },
        shape: shape.data
      }
    } catch (error) {
      throw describeFailure(error)
    }
  }
}
