/** The loopback redirect the app's metadata document names: any port (RFC 8252 §7.3), the server found by `state`. */
export const SHARED_CALLBACK_PATH = '/oauth/callback'

/**
 * The client ID metadata document (draft-ietf-oauth-client-id-metadata-document) the app publishes at the HTTPS URL
 * that is its client_id: a public native client with the loopback redirect.
 */
export function clientMetadataDocument(clientId: string): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: 'Syncscope',
    application_type: 'native',
    redirect_uris: [`http://127.0.0.1${SHARED_CALLBACK_PATH}`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none'
  }
}
