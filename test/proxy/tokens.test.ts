import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeProtectedHeader } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseProxyConfig, SIGNING_ALGORITHMS } from '../../src/main/proxy/config'
import { SigningKeys } from '../../src/main/proxy/signing-keys'
import { AuthError, TokenService } from '../../src/main/proxy/tokens'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-proxy-tokens-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

const user = { id: 'u1', name: 'Ada', roles: ['member'], claims: { org_id: 7 } }
const shape = {
  table: 'public.issues',
  columns: null,
  where: 'owner_id = $1',
  params: { 1: 'u1' },
  replica: 'default' as const,
  queryable_columns: null
}

async function serviceFor(algorithm: string, keys: SigningKeys): Promise<TokenService> {
  const { config } = await parseProxyConfig(JSON.stringify({ users: [user], gatekeeper: { algorithm } }))
  return new TokenService({ config, keys })
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => (error instanceof AuthError ? error.code : String(error))
  )

describe('the app-signed tokens', () => {
  it.each(SIGNING_ALGORITHMS)(
    'mints and verifies access and shape tokens with %s, each only where it belongs',
    async (algorithm) => {
      const tokens = await serviceFor(algorithm, new SigningKeys(join(dir, 'keys.json')))
      const access = await tokens.mintAccessToken(user)
      expect(decodeProtectedHeader(access).alg).toBe(algorithm)
      const caller = await tokens.verifyAccessToken(access)
      expect(caller).toMatchObject({ subject: 'u1', roles: ['member'], claims: { org_id: 7, name: 'Ada' } })
      const shapeToken = await tokens.mintShapeToken(caller, shape)
      expect((await tokens.verifyShapeToken(shapeToken)).shape).toEqual(shape)
      expect(await refusal(tokens.verifyShapeToken(access))).toBe('invalid_token')
      expect(await refusal(tokens.verifyAccessToken(shapeToken))).toBe('invalid_token')
    }
  )

  it('keeps its keys: a restarted app verifies the tokens it minted before', async () => {
    const file = join(dir, 'kept.json')
    const before = await serviceFor('ES256', new SigningKeys(file))
    const token = await before.mintAccessToken(user)
    const after = await serviceFor('ES256', new SigningKeys(file))
    expect((await after.verifyAccessToken(token)).subject).toBe('u1')
    const otherKeys = await serviceFor('ES256', new SigningKeys(join(dir, 'other.json')))
    expect(await refusal(otherKeys.verifyAccessToken(token))).toBe('invalid_signature')
  })

  it('refuses a token of another algorithm than the configured one', async () => {
    const keys = new SigningKeys(join(dir, 'mixed.json'))
    const hmac = await (await serviceFor('HS256', keys)).mintAccessToken(user)
    expect(await refusal((await serviceFor('ES256', keys)).verifyAccessToken(hmac))).toBe('invalid_token')
  })
})
