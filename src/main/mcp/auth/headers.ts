import type { FetchLike } from './oauth-log'

/** Sets headers on a request without dropping the ones the SDK already set. */
export function withHeaders(init: RequestInit | undefined, extra: Record<string, string>): RequestInit {
  const headers = new Headers(init?.headers)
  for (const [name, value] of Object.entries(extra)) headers.set(name, value)
  return { ...init, headers }
}

/** A fetch that adds fixed headers (a config's `headers`, an API key) to every request. */
export function fetchWithHeaders(base: FetchLike, headers: Record<string, string>): FetchLike {
  if (Object.keys(headers).length === 0) return base
  return (input, init) => base(input, withHeaders(init, headers))
}

export function apiKeyHeader(auth: {
  key: string
  headerName?: string | undefined
  valuePrefix?: string | undefined
}): Record<string, string> {
  return { [auth.headerName ?? 'Authorization']: `${auth.valuePrefix ?? ''}${auth.key}` }
}
