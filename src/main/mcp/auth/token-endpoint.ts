import { discoverOAuthServerInfo } from '@modelcontextprotocol/sdk/client/auth.js'
import { checkResourceAllowed } from '@modelcontextprotocol/sdk/shared/auth-utils.js'
import { McpFailure } from '../errors'
import { sameIssuer } from './authorization-code'
import { httpsOrLoopback } from './browser-url'
import type { FetchLike } from './oauth-log'
import type { ResourceChallenge } from './resource-challenge'

/** Where a client-credentials grant is sent, and what its token request says. */
export interface TokenEndpoint {
  url: string
  /** The authorisation server's issuer: the audience of a private_key_jwt assertion (the URL itself without one). */
  audience: string
  /** The resource (RFC 8707) the metadata names, for the token request. */
  resource: string | null
}

/**
 * The token endpoint of a server whose clientCredentials config names none: the protected resource metadata (where
 * the resource's 401 named it, else its well-known path) names the authorisation server, whose metadata names the
 * endpoint. The client's credentials go there, so the metadata must be of the issuer asked for (RFC 8414 §3.3: else
 * an assertion for another server's issuer would be handed to this one) and its endpoint https: (http: on loopback).
 */
export async function discoverTokenEndpoint(
  serverUrl: string,
  challenge: ResourceChallenge,
  fetchFn: FetchLike
): Promise<TokenEndpoint> {
  const found = await discoverOAuthServerInfo(serverUrl, {
    ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}),
    fetchFn
  })
  const { authorizationServerUrl: issuer, authorizationServerMetadata: metadata, resourceMetadata } = found
  const refuse = (why: string) =>
    new McpFailure('auth_unavailable', `${serverUrl}: ${why}; give auth.tokenUrl to name the token endpoint`)
  if (!metadata) throw refuse(`the authorisation server ${issuer} publishes no metadata`)
  if (!sameIssuer(metadata.issuer, issuer))
    throw refuse(`the metadata of ${issuer} names another issuer (${metadata.issuer})`)
  if (!httpsOrLoopback(metadata.token_endpoint))
    throw refuse(`the token endpoint ${metadata.token_endpoint} is not https: (nor http: on loopback)`)
  const resource = resourceMetadata?.resource ?? null
  if (resource && !checkResourceAllowed({ requestedResource: serverUrl, configuredResource: resource }))
    throw refuse(`its metadata is for another resource (${resource})`)
  return { url: metadata.token_endpoint, audience: metadata.issuer, resource }
}
