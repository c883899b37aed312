import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeJwt } from 'jose'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { McpServerEntrySchema } from '../../src/shared/contract/mcp'
import { McpHost } from '../../src/main/mcp/host'
import { boundName, entryBinding } from '../../src/main/mcp/persistence/binding'
import { keychainStore } from '../../src/main/mcp/persistence/secret-store'
import { Registry } from '../../src/main/mcp/registry'
import { MASK } from '../../src/main/mcp/mask'
import { describeWith } from '../support/facility-tests'
import { startHeadlessKeyring, type HeadlessKeyring } from './support/keyring'
import { ecKey, jwtClient, pem, rsaKey } from './support/jwt-client'
import { textOf } from './support/processes'
import { startProtectedServer } from './support/protected-server'

// The client-credentials grant with private_key_jwt client authentication (RFC 7523 §2.2): the client proves itself
// with an assertion signed by its private key, which never leaves the machine. An SDK server behind oidc-provider,
// whose client is registered with the public key.

const stops: Array<() => Promise<void>> = []
let registry: Registry | null = null
/** Every token request the registry sent: its form body. */
let tokenRequests: URLSearchParams[] = []

afterEach(async () => {
  await registry?.close()
  registry = null
  tokenRequests = []
  for (const stop of stops.splice(0).reverse()) await stop()
})

function newRegistry(): Registry {
  registry = new Registry({
    fetch: (input, init) => {
      if (typeof init?.body === 'string' && init.body.includes('grant_type=client_credentials'))
        tokenRequests.push(new URLSearchParams(init.body))
      return fetch(input, init)
    }
  })
  return registry
}

describe('clientCredentials with private_key_jwt against oidc-provider', () => {
  it('signs a short-lived assertion for the token endpoint; a 401 gets one fresh exchange with a new assertion', async () => {
    const { privateKey, publicKey } = ecKey()
    const { as, rs } = await startProtectedServer(stops, {}, { clients: [jwtClient(publicKey)] })
    const target = newRegistry()
    const entry = await target.addServer({
      name: 'signed',
      transport: 'http',
      url: rs.url,
      auth: {
        mode: 'clientCredentials',
        tokenUrl: `${as.issuer}/token`,
        clientId: 'jwt-client',
        privateKey: pem(privateKey),
        scopes: ['mcp:tools'],
        resource: rs.url
      }
    })
    expect(entry.state).toBe('connected')
    const caller = JSON.parse(textOf(await target.callTool('signed', 'whoami'))) as { client_id: string }
    expect(caller.client_id).toBe('jwt-client')
    expect(tokenRequests).toHaveLength(1)
    const [first] = tokenRequests
    expect(first!.get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
    expect(first!.has('client_secret')).toBe(false)
    const claims = decodeJwt(first!.get('client_assertion')!)
    expect(claims).toMatchObject({ iss: 'jwt-client', sub: 'jwt-client', aud: `${as.issuer}/token` })
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(300)

    rs.revoke(rs.lastJti() ?? '')
    expect(textOf(await target.callTool('signed', 'echo', { text: 'again' }))).toBe('again')
    expect(as.tokenPosts('client_credentials').map((post) => post.status)).toEqual([200, 200])
    expect(decodeJwt(tokenRequests[1]!.get('client_assertion')!).jti).not.toBe(claims.jti)
    expect(JSON.stringify(target.list())).not.toContain('PRIVATE KEY')
  })

  it('without tokenUrl, finds the token endpoint from the resource (its 401, then the metadata); the assertion is for the issuer', async () => {
    const { privateKey, publicKey } = rsaKey()
    const { as, rs } = await startProtectedServer(stops, {}, { clients: [jwtClient(publicKey, 'rsa-client', 'RS256')] })
    const target = newRegistry()
    const entry = await target.addServer({
      name: 'discovered',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'clientCredentials', clientId: 'rsa-client', privateKey: pem(privateKey) }
    })
    expect(entry.state).toBe('connected')
    expect(rs.metadataRequests).toEqual(['/.well-known/oauth-protected-resource/mcp'])
    const [request] = tokenRequests
    // the resource named in its metadata (RFC 8707), RS256 for an RSA key
    expect(request!.get('resource')).toBe(rs.url)
    const assertion = request!.get('client_assertion')!
    expect(JSON.parse(Buffer.from(assertion.split('.')[0]!, 'base64url').toString())).toMatchObject({ alg: 'RS256' })
    expect(decodeJwt(assertion).aud).toBe(as.issuer)
    expect(textOf(await target.callTool('discovered', 'echo', { text: 'found' }))).toBe('found')
  })

  it('a key the authorisation server does not know is an error entry naming the endpoint and its refusal', async () => {
    const { publicKey } = ecKey()
    const { as, rs } = await startProtectedServer(stops, {}, { clients: [jwtClient(publicKey)] })
    const entry = await newRegistry().addServer({
      name: 'stranger',
      transport: 'http',
      url: rs.url,
      auth: {
        mode: 'clientCredentials',
        tokenUrl: `${as.issuer}/token`,
        clientId: 'jwt-client',
        privateKey: pem(ecKey().privateKey)
      }
    })
    expect(tokenRequests.at(-1)?.has('client_assertion')).toBe(true)
    expect(entry).toMatchObject({
      state: 'error',
      error: {
        code: 'auth_unavailable',
        message: expect.stringContaining(`${as.issuer}/token refused the client credentials (401 invalid_client`)
      }
    })
  })

  it('refuses a key that is not a PEM private key, or an algorithm it cannot sign with, naming the field', async () => {
    const { rs } = await startProtectedServer(stops)
    const target = newRegistry()
    const base = { transport: 'http' as const, url: rs.url }
    const broken = await target.addServer({
      ...base,
      name: 'broken',
      auth: {
        mode: 'clientCredentials',
        clientId: 'c',
        privateKey: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----'
      }
    })
    expect(broken).toMatchObject({
      state: 'error',
      error: {
        code: 'invalid_config',
        path: ['auth', 'privateKey'],
        message: expect.stringContaining('auth.privateKey: not a PEM private key')
      }
    })
    const mismatched = await target.addServer({
      ...base,
      name: 'mismatched',
      auth: { mode: 'clientCredentials', clientId: 'c', privateKey: pem(ecKey().privateKey), signingAlgorithm: 'RS256' }
    })
    expect(mismatched.error).toMatchObject({
      code: 'invalid_config',
      message: 'auth.signingAlgorithm: RS256 does not sign with an ec key (P-256 signs ES256)'
    })
  })
})

describe('the config: private_key_jwt or client_secret_basic, one of them', () => {
  const entry = (auth: Record<string, unknown>) =>
    McpServerEntrySchema.safeParse({
      transport: 'http',
      url: 'https://mcp.example/mcp',
      auth: { mode: 'clientCredentials', clientId: 'c', ...auth }
    })

  it('takes a clientSecret or a privateKey, and no tokenUrl (discovery)', () => {
    expect(entry({ clientSecret: 's' }).success).toBe(true)
    expect(entry({ privateKey: pem(ecKey().privateKey), signingAlgorithm: 'ES256' }).success).toBe(true)
  })

  it('refuses both, neither, a text that is no PEM private key, and an algorithm without a key', () => {
    const issues = (auth: Record<string, unknown>) =>
      entry(auth).error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`)
    expect(issues({})).toEqual([
      'auth.clientSecret: give clientSecret (client_secret_basic) or privateKey (private_key_jwt)'
    ])
    expect(issues({ clientSecret: 's', privateKey: pem(ecKey().privateKey) })).toEqual([
      'auth.clientSecret: give clientSecret (client_secret_basic) or privateKey (private_key_jwt), not both'
    ])
    expect(issues({ privateKey: 'my-key' })).toEqual([
      'auth.privateKey: must be a PEM private key (-----BEGIN PRIVATE KEY-----…)'
    ])
    expect(issues({ clientSecret: 's', signingAlgorithm: 'ES256' })).toEqual([
      'auth.signingAlgorithm: signs the privateKey assertion: give privateKey'
    ])
  })
})

describeWith(
  ['linux', 'dbus', 'keyring'],
  'the private key in the OS keychain (Secret Service on a private D-Bus)',
  () => {
    let keyring: HeadlessKeyring
    let dir: string
    beforeAll(async () => {
      keyring = await startHeadlessKeyring()
      process.env.DBUS_SESSION_BUS_ADDRESS = keyring.address
      dir = await mkdtemp(join(tmpdir(), 'syncscope-private-key-'))
    })
    afterAll(async () => {
      await keyring?.stop()
      await rm(dir, { recursive: true, force: true })
    })

    it('a key typed on the MCP page goes to the keychain, the file names it, and the server connects with it', async () => {
      const { privateKey, publicKey } = ecKey()
      const { as, rs } = await startProtectedServer(stops, {}, { clients: [jwtClient(publicKey)] })
      const settingsFile = join(dir, 'settings.json')
      await writeFile(settingsFile, '{}')
      const store = await keychainStore()
      const host = new McpHost({ workspace: null, settingsFile, secretStore: store })
      stops.push(() => host.close())
      await host.start()
      const written = {
        transport: 'http',
        url: rs.url,
        auth: {
          mode: 'clientCredentials',
          tokenUrl: `${as.issuer}/token`,
          clientId: 'jwt-client',
          privateKey: pem(privateKey)
        }
      }
      const saved = await host.save('keyed', written)
      expect(saved.state).toBe('connected')
      expect((saved.config?.auth as Record<string, unknown>).privateKey).toBe('${keychain:auth.privateKey}')
      const file = await readFile(settingsFile, 'utf8')
      expect(file).toContain('"privateKey": "${keychain:auth.privateKey}"')
      expect(file).not.toContain('PRIVATE KEY-----')
      const account = `secret:${boundName({ name: 'keyed', binding: entryBinding(written) })}:auth.privateKey`
      expect(await store.get(account)).toBe(pem(privateKey))
      expect(textOf(await host.registry.callTool('keyed', 'echo', { text: 'keyed' }))).toBe('keyed')
      // shown masked when the page edits it again, and saving the mask keeps the stored key
      const again = await host.save('keyed', {
        ...written,
        auth: { ...written.auth, privateKey: MASK, scopes: ['mcp:tools'] }
      })
      expect(again.state).toBe('connected')
      expect(await store.get(account)).toBe(pem(privateKey))
    })
  }
)
