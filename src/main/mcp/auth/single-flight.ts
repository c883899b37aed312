import type { FetchLike } from './oauth-log'

/**
 * One refresh per refresh token: when the SDK answers two concurrent 401s (the POST and the SSE GET) with two
 * refreshes, the second would replay a rotated refresh token, which authorisation servers treat as theft and answer by
 * revoking the grant. Identical refresh requests in flight share one response.
 */
export function singleFlightRefresh(base: FetchLike): FetchLike {
  const inFlight = new Map<string, Promise<Response>>()
  return async (input, init) => {
    const body = typeof init?.body === 'string' ? init.body : init?.body instanceof URLSearchParams ? init.body.toString() : null
    if (!body || !/grant_type=refresh_token/.test(body)) return base(input, init)
    const key = `${String(input)}\n${body}`
    let shared = inFlight.get(key)
    if (!shared) {
      shared = base(input, init).finally(() => setTimeout(() => inFlight.delete(key), 1_000))
      inFlight.set(key, shared)
    }
    return (await shared).clone()
  }
}
