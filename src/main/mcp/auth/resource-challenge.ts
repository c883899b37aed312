import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import type { FetchLike } from './oauth-log'

/** What a resource's 401 says about logging in to it (MCP authorization; RFC 9728 §5.1, RFC 6750 §3). */
export interface ResourceChallenge {
  /** Where its protected resource metadata is: used before the well-known paths. */
  resourceMetadataUrl?: URL
  /** The scope it asks for: used before the metadata's scopes_supported. */
  scope?: string
}

/**
 * Asks the resource, without credentials, what a login needs: the `initialize` every MCP client sends first, whose
 * 401 challenge names the metadata and the scope. A resource that answers it without credentials names neither; a
 * session it opened for the request is ended again.
 */
export async function resourceChallenge(
  url: string,
  fetchFn: FetchLike,
  clientInfo: { name: string; version: string }
): Promise<ResourceChallenge> {
  const response = await fetchFn(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo }
    })
  })
  await response.body?.cancel()
  const session = response.headers.get('mcp-session-id')
  if (response.ok && session)
    await fetchFn(url, { method: 'DELETE', headers: { 'mcp-session-id': session } }).then(
      (ended) => ended.body?.cancel(),
      () => {}
    )
  if (response.status !== 401) return {}
  const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response)
  return { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) }
}
