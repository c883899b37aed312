/**
 * The loopback redirect of one server's logins: its own path, so an answer is taken only for the login it belongs to
 * (any port, RFC 8252 §7.3).
 */
export const callbackPath = (server: string) => `/oauth/callback/${encodeURIComponent(server)}`

/**
 * The client ID metadata document (draft-ietf-oauth-client-id-metadata-document) the app publishes at the HTTPS URL
 * that is its client_id: a public native client with a loopback redirect per server that logs in with it.
 */
export function clientMetadataDocument(clientId: string, servers: readonly string[]): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: 'Syncscope',
    application_type: 'native',
    redirect_uris: servers.map((server) => `http://127.0.0.1${callbackPath(server)}`),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none'
  }
}
