import type { FetchLike } from './oauth-log'

const bearerOf = (headers: RequestInit['headers']): string | null =>
  /^Bearer\s+(\S+)$/i.exec(new Headers(headers).get('authorization') ?? '')?.[1] ?? null

export interface CurrentToken {
  /** The access token in use now. */
  current(): string | undefined
  /** Told of each access token a request was refused with (401). */
  refusedWith(accessToken: string): void
  /** Resolves once the refreshes in flight have ended. */
  settled(): Promise<void>
}

/**
 * A 401 for an access token a refresh replaced (the request left before the refresh ended; its 401 may come before or
 * after that end) is sent once more with the current token, instead of reaching the SDK, which would refresh again:
 * each refresh rotates the refresh token, and a needless rotation races with other processes that still hold the one
 * before it.
 */
export function resendWithCurrentToken(base: FetchLike, token: CurrentToken): FetchLike {
  return async (input, init) => {
    const response = await base(input, init)
    if (response.status !== 401) return response
    const sent = bearerOf(init?.headers)
    if (!sent) return response
    token.refusedWith(sent)
    await token.settled()
    const current = token.current()
    const resendable = init?.body === undefined || init.body === null || typeof init.body === 'string'
    if (!current || sent === current || !resendable) return response
    await response.body?.cancel()
    const headers = new Headers(init?.headers)
    headers.set('authorization', `Bearer ${current}`)
    return base(input, { ...init, headers })
  }
}
