import type { OAuthTokens, TokenStatus } from '../../shared/contract/mcp'

/** What the UI shows for a secret it must not see; saving it back keeps the stored value. */
export const MASK = '••••••••'

const SECRET_KEY = /(^key$|secret|token|password|passwd|credential|^authorization$|api[-_]?key|private[-_]?key|cookie)/i
/** A value with a placeholder names where its secret comes from (`Bearer ${input:token}`) rather than holding it. */
const HAS_PLACEHOLDER = /\$\{[^}]+\}/

/** A literal secret: a secret-looking field whose value has no placeholder. */
export function isLiteralSecret(key: string, value: unknown): value is string {
  return typeof value === 'string' && SECRET_KEY.test(key) && !HAS_PLACEHOLDER.test(value) && value !== MASK
}

/** A copy with every literal secret replaced by MASK; placeholders stay visible. */
export function maskSecrets(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((item) => maskSecrets(item, key))
  if (value && typeof value === 'object') {
    if (SECRET_KEY.test(key) && key !== 'tokens') return MASK
    return Object.fromEntries(
      Object.entries(value).map(([childKey, child]) => [childKey, maskSecrets(child, childKey)])
    )
  }
  if (typeof value === 'string' && SECRET_KEY.test(key) && !HAS_PLACEHOLDER.test(value)) return MASK
  return value
}

/** First and last four characters, for telling tokens apart without revealing them. */
export function preview(secret: string): string {
  return secret.length <= 12 ? MASK : `${secret.slice(0, 4)}…${secret.slice(-4)}`
}

export function tokenStatus(tokens: OAuthTokens | undefined, clientId: string | undefined): TokenStatus {
  return {
    hasAccessToken: Boolean(tokens?.accessToken),
    hasRefreshToken: Boolean(tokens?.refreshToken),
    expiresAt: tokens?.expiresAt ?? null,
    scope: tokens?.scope ?? null,
    issuer: tokens?.issuer ?? null,
    preview: tokens?.accessToken ? preview(tokens.accessToken) : null,
    clientId: clientId ?? null
  }
}
