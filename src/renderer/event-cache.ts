import type { QueryClient, QueryKey } from '@tanstack/react-query'
import { MCP_OAUTH_LOG_KEPT, MCP_RPC_LOG_KEPT } from '../shared/contract/mcp'
import { PROXY_EXCHANGES_KEPT } from '../shared/contract/proxy'
import type { AppEvent } from './events'

/** JSON with sorted keys: the same entry read by a call and pushed by an event compares equal whatever its key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(
          Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        )
      : inner
  )
}

/**
 * Appends an entry main pushed to the list a query holds (newest last, as many as main keeps). A query nobody has
 * read yet is left alone (its first read fetches the list); one being fetched is fetched again once that fetch is
 * done, since its answer may have been built before the entry (React Query joins a refetch asked for during a first
 * load to that load instead of starting another). An entry the list already has is not added twice.
 */
function appendEntry<T>(
  client: QueryClient,
  queryKey: QueryKey,
  entry: T,
  kept: number,
  same: (a: T, b: T) => boolean
): void {
  const query = client.getQueryCache().find({ queryKey, exact: true })
  if (!query) return
  const inFlight = query.promise
  if (query.state.fetchStatus === 'fetching' && inFlight) {
    void inFlight.catch(() => undefined).then(() => client.invalidateQueries({ queryKey, exact: true }))
    return
  }
  client.setQueryData<T[]>(queryKey, (list) =>
    list === undefined || list.some((known) => same(known, entry)) ? list : [...list, entry].slice(-kept)
  )
}

const sameId = (a: { id: string }, b: { id: string }) => a.id === b.id
const sameEntry = (a: unknown, b: unknown) => canonical(a) === canonical(b)

/**
 * Writes what an event carries into the queries that read it (the query keys of `useCall`: `[name, input]`), instead
 * of fetching the whole list again. Returns false for an event that carries no state to write (e.g. `db.changed`),
 * which its readers answer by refetching (`useInvalidateOn`).
 */
export function writeEventToCache(client: QueryClient, event: AppEvent): boolean {
  switch (event.name) {
    case 'proxy.exchange':
      appendEntry(client, ['proxy.exchanges', {}], event.payload, PROXY_EXCHANGES_KEPT, sameId)
      return true
    case 'mcp.rpc':
      appendEntry(
        client,
        ['mcp.rpcLog', { name: event.payload.name }],
        event.payload.message,
        MCP_RPC_LOG_KEPT,
        sameEntry
      )
      return true
    case 'mcp.oauthStep':
      appendEntry(
        client,
        ['mcp.oauthLog', { name: event.payload.name }],
        event.payload.exchange,
        MCP_OAUTH_LOG_KEPT,
        sameEntry
      )
      return true
    case 'mcp.elicitation':
      appendEntry(client, ['mcp.elicitations', {}], event.payload, Number.POSITIVE_INFINITY, sameId)
      return true
    default:
      return false
  }
}
