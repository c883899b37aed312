import type { OAuthTokens as SdkTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import type { OAuthTokens } from '../../../shared/contract/mcp-config'
import { toSdkTokens } from './authorization-code'
import type { FetchLike } from './oauth-log'

/** A server's tokens as persisted (the keychain or the 0600 file) and the lock other processes take to refresh them. */
export interface TokenRecord {
  /** The stored tokens, read anew: another process may have rotated them since we read them. */
  read(): Promise<OAuthTokens | undefined>
  locked<T>(work: () => Promise<T>): Promise<T>
}

export interface RefreshHooks {
  /** null: nothing persisted beyond this process. */
  record: TokenRecord | null
  /** The provider's saveTokens: the new tokens in memory and persisted, before the lock is released. */
  save(tokens: SdkTokens): Promise<void>
  /** The authorisation server the tokens in use are bound to. */
  issuer(): string | undefined
  /** A refresh answered from the record, for the OAuth timeline. */
  note(url: string, text: string): void
  /** Whether a request with this access token was answered 401. */
  refused(accessToken: string): boolean
}

/** A refresh never holds the lock longer than this (an authorisation server that does not answer). */
const REFRESH_TIMEOUT_MS = 30_000

function formOf(init: RequestInit | undefined): URLSearchParams | null {
  const body = init?.body
  if (typeof body === 'string') return new URLSearchParams(body)
  return body instanceof URLSearchParams ? body : null
}

function tokenResponse(tokens: SdkTokens): Response {
  return new Response(JSON.stringify(tokens), {
    status: 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' }
  })
}

const strip = (url: string) => url.replace(/\/+$/, '')

export interface CoordinatedRefresh {
  fetch: FetchLike
  /** Resolves once the refreshes asked for so far in this process have ended (at once when none is). */
  settled(): Promise<void>
}

/**
 * One refresh per server at a time, in this process and across processes (the app and `syncscope mcp run` share the
 * stored tokens). With rotating refresh tokens a second refresh with the same refresh token is refused and, by most
 * authorisation servers, answered by revoking the grant. So every refresh request waits for the lock, then looks at
 * the truth: a refresh token another caller already rotated away is answered with the tokens that caller stored (no
 * request); otherwise the refresh is sent, and its tokens are stored before the lock is released.
 */
export function coordinatedRefresh(base: FetchLike, hooks: RefreshHooks): CoordinatedRefresh {
  let queue: Promise<unknown> = Promise.resolve()
  /** The last refresh in this process: a caller presenting its old refresh token gets its result. */
  let lastRotation: { from: string; to: SdkTokens } | null = null

  const serialised = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(
      () => (hooks.record ? hooks.record.locked(work) : work()),
      () => (hooks.record ? hooks.record.locked(work) : work())
    )
    queue = run.catch(() => {})
    return run
  }

  /** Tokens that answer a refresh without a request: the caller's refresh token was rotated, or needs no rotation. */
  const rotatedElsewhere = async (presented: string): Promise<SdkTokens | null> => {
    if (lastRotation?.from === presented) return lastRotation.to
    // tokens this process just got, whose access token no request has seen refused: the 401 was for the one before
    if (lastRotation?.to.refresh_token === presented && !hooks.refused(lastRotation.to.access_token))
      return lastRotation.to
    const stored = await hooks.record?.read().catch(() => undefined)
    if (!stored?.refreshToken || stored.refreshToken === presented) return null
    const issuer = hooks.issuer()
    if (stored.issuer && issuer && strip(stored.issuer) !== strip(issuer)) return null
    return toSdkTokens(stored)
  }

  const fetch: FetchLike = async (input, init) => {
    const form = formOf(init)
    const presented = form?.get('grant_type') === 'refresh_token' ? form.get('refresh_token') : null
    if (!presented) return base(input, init)
    return serialised(async () => {
      const newer = await rotatedElsewhere(presented)
      if (newer) {
        await hooks.save(newer)
        hooks.note(
          String(input),
          'not sent: the tokens were already refreshed (by another call or process); those are used'
        )
        return tokenResponse(newer)
      }
      const response = await base(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(REFRESH_TIMEOUT_MS) })
      if (!response.ok) return response
      const tokens = (await response
        .clone()
        .json()
        .catch(() => null)) as SdkTokens | null
      if (tokens && typeof tokens.access_token === 'string') {
        const issuer = hooks.issuer()
        const rotated: SdkTokens = { refresh_token: presented, ...tokens, ...(issuer ? { issuer } : {}) }
        await hooks.save(rotated)
        lastRotation = { from: presented, to: rotated }
      }
      return response
    })
  }
  return { fetch, settled: () => queue.then(() => undefined) }
}
