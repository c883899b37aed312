import type { FetchLike } from './oauth-log'

const bearerOf = (headers: RequestInit['headers']): string | null =>
  /^Bearer\s+(\S+)$/i.exec(new Headers(headers).get('authorization') ?? '')?.[1] ?? null

/**
 * A 401 for an access token a refresh already replaced (the request left before the refresh ended) is sent once more
 * with the current token, instead of reaching the SDK, which would refresh again: each refresh rotates the refresh
 * token, and a needless rotation races with other processes that still hold the one before it.
 */
export function resendWithCurrentToken(base: FetchLike, currentToken: () => string | undefined): FetchLike {
  return async (input, init) => {
    const response = await base(input, init)
    if (response.status !== 401) return response
    const sent = bearerOf(init?.headers)
    const current = currentToken()
    const resendable = init?.body === undefined || init.body === null || typeof init.body === 'string'
    if (!sent || !current || sent === current || !resendable) return response
    await response.body?.cancel()
    const headers = new Headers(init?.headers)
    headers.set('authorization', `Bearer ${current}`)
    return base(input, { ...init, headers })
  }
}
