import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto'
import { SignJWT } from 'jose'
import type { SIGNING_ALGORITHMS } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'

type Algorithm = (typeof SIGNING_ALGORITHMS)[number]

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
/** An assertion is good for this long: enough for one token request, too short to be worth stealing. */
const LIFETIME_S = 60
const CURVE_ALGORITHMS: Record<string, Algorithm> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' }
const CURVE_NAMES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' }

/** A private_key_jwt client's key, read once, and the algorithm its assertions are signed with. */
export interface AssertionKey {
  key: KeyObject
  algorithm: Algorithm
}

const invalid = (field: 'privateKey' | 'signingAlgorithm', message: string) =>
  new McpFailure('invalid_config', `auth.${field}: ${message}`, { path: ['auth', field] })

/** What the key signs, for the message when the algorithm asked for does not fit it. */
function keyAlgorithms(key: KeyObject): {
  describe: string
  fits: (algorithm: Algorithm) => boolean
  default?: Algorithm
} {
  const type = key.asymmetricKeyType ?? 'unknown'
  const curve = key.asymmetricKeyDetails?.namedCurve ?? ''
  switch (type) {
    case 'rsa':
      return { describe: 'an rsa key (RS256, PS256 …)', fits: (alg) => /^(RS|PS)/.test(alg), default: 'RS256' }
    case 'rsa-pss':
      return { describe: 'an rsa-pss key (PS256 …)', fits: (alg) => alg.startsWith('PS'), default: 'PS256' }
    case 'ec': {
      const algorithm = CURVE_ALGORITHMS[curve]
      return {
        describe: `an ec key (${CURVE_NAMES[curve] ?? curve} signs ${algorithm ?? 'nothing here'})`,
        fits: (alg) => alg === algorithm,
        ...(algorithm ? { default: algorithm } : {})
      }
    }
    case 'ed25519':
      return { describe: 'an ed25519 key (EdDSA)', fits: (alg) => alg === 'EdDSA', default: 'EdDSA' }
    default:
      return { describe: `a ${type} key`, fits: () => false }
  }
}

/**
 * The PEM private key of a clientCredentials config (PKCS#8, or PKCS#1 / SEC1) and the algorithm for it: the one
 * configured, which must fit the key, else the key's own (RS256, PS256, ES256/384/512, EdDSA).
 */
export function assertionKey(pem: string, configured?: Algorithm): AssertionKey {
  let key: KeyObject
  try {
    key = createPrivateKey(pem)
  } catch (error) {
    throw invalid('privateKey', `not a PEM private key (${(error as Error).message})`)
  }
  const signs = keyAlgorithms(key)
  if (configured && !signs.fits(configured))
    throw invalid('signingAlgorithm', `${configured} does not sign with ${signs.describe}`)
  const algorithm = configured ?? signs.default
  if (!algorithm) throw invalid('privateKey', `is ${signs.describe}: use an RSA, EC (P-256/384/521) or Ed25519 key`)
  return { key, algorithm }
}

/**
 * A client assertion (RFC 7523 §2.2, §3): issued by the client about itself, for the authorisation server (its
 * issuer, or the token endpoint), used once (jti) within a minute.
 */
export function clientAssertion(
  key: AssertionKey,
  clientId: string,
  audience: string,
  now = Date.now()
): Promise<string> {
  const issuedAt = Math.floor(now / 1000)
  return new SignJWT({})
    .setProtectedHeader({ alg: key.algorithm, typ: 'JWT' })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(audience)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + LIFETIME_S)
    .setJti(randomUUID())
    .sign(key.key)
}
