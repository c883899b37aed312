import { generateKeyPairSync, type KeyObject } from 'node:crypto'

export const ecKey = () => generateKeyPairSync('ec', { namedCurve: 'P-256' })
export const rsaKey = () => generateKeyPairSync('rsa', { modulusLength: 2048 })
export const pem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString()

/**
 * An oidc-provider client that authenticates with private_key_jwt (RFC 7523): the authorisation server knows its
 * public key (its JWKS) and nothing else of it; it may only use the client-credentials grant.
 */
export function jwtClient(publicKey: KeyObject, clientId = 'jwt-client', alg = 'ES256'): Record<string, unknown> {
  return {
    client_id: clientId,
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: alg,
    jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), use: 'sig' }] },
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: []
  }
}
