import { execFile, spawnSync } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { filePersistence, keychainPersistence, forgetPersisted } from '../../src/main/mcp/persistence/oauth-persistence'
import { fileSecretStore, keychainStore, KeychainError } from '../../src/main/mcp/persistence/secret-store'
import { McpHost } from '../../src/main/mcp/host'
import { keyringUnavailable, startHeadlessKeyring, type HeadlessKeyring } from './support/keyring'
import { startMcpHttpServer } from './support/mcp-http-server'
import { authorizeInBrowser, startAuthServer } from './support/oauth-server'

const run = promisify(execFile)
const tokens = { accessToken: 'at-0123456789abcdef', refreshToken: 'rt-0123456789abcdef', expiresAt: 2_000_000_000 }
const client = { clientId: 'client-1', issuer: 'http://127.0.0.1:1/', redirect_uris: ['http://127.0.0.1:2/oauth/callback/demo'], client_id_issued_at: 1 }

describe('filePersistence (0600 JSON)', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-file-persistence-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('writes 0600 even under umask 000, keeps every server and the registration metadata as returned', async () => {
    const path = join(dir, 'nested', 'oauth.json')
    const previous = process.umask(0)
    try {
      const demo = await filePersistence({ path, server: 'demo' })
      expect(demo.tokens).toBeUndefined()
      await demo.onTokensChanged(tokens)
      await demo.onClientRegistered(client)
      await (await filePersistence({ path, server: 'other' })).onTokensChanged({ accessToken: 'other-token' })
    } finally {
      process.umask(previous)
    }
    expect((await stat(path)).mode & 0o777).toBe(0o600)
    expect((await stat(join(dir, 'nested'))).mode & 0o777).toBe(0o700)
    const again = await filePersistence({ path, server: 'demo' })
    expect(again.tokens).toEqual(tokens)
    expect(again.client).toEqual(client)
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({ tokens: { demo: tokens, other: { accessToken: 'other-token' } } })
  })

  it('loses no update when writes race', async () => {
    const path = join(dir, 'race.json')
    const slices = await Promise.all(['a', 'b', 'c', 'd'].map((server) => filePersistence({ path, server })))
    await Promise.all(slices.map((slice, index) => slice.onTokensChanged({ accessToken: `token-${index}` })))
    expect(Object.keys((JSON.parse(await readFile(path, 'utf8')) as { tokens: object }).tokens).sort()).toEqual(['a', 'b', 'c', 'd'])
  })

  it('refuses to read a file other users could read (0644), and 0400', async () => {
    const path = join(dir, 'loose.json')
    await writeFile(path, JSON.stringify({ tokens: { demo: tokens } }), { mode: 0o644 })
    await chmod(path, 0o644)
    await expect(filePersistence({ path, server: 'demo' })).rejects.toThrow(/mode 0644; a secrets file must be 0600/)
    await chmod(path, 0o400)
    await expect(filePersistence({ path, server: 'demo' })).rejects.toThrow(/mode 0400/)
  })

  it('stores plain secrets for machines without a keychain', async () => {
    const store = fileSecretStore(join(dir, 'secrets.json'))
    await store.set('secret:api:auth.key', 'k-1')
    expect(await store.get('secret:api:auth.key')).toBe('k-1')
    await store.delete('secret:api:auth.key')
    expect(await store.get('secret:api:auth.key')).toBeUndefined()
  })
})

describe('keychain store on other platforms', () => {
  it('throws a clear error on Windows', () => {
    expect(() => keychainStore({ platform: 'win32' })).toThrow(KeychainError)
    expect(() => keychainStore({ platform: 'win32' })).toThrow(/macOS and Linux, not win32/)
  })
})

const skipReason = keyringUnavailable()
describe.skipIf(skipReason !== null)(`keychainPersistence with the real secret-tool${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  let keyring: HeadlessKeyring
  let previousAddress: string | undefined
  beforeAll(async () => {
    keyring = await startHeadlessKeyring()
    previousAddress = process.env.DBUS_SESSION_BUS_ADDRESS
    process.env.DBUS_SESSION_BUS_ADDRESS = keyring.address
  })
  afterAll(async () => {
    if (previousAddress === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS
    else process.env.DBUS_SESSION_BUS_ADDRESS = previousAddress
    await keyring?.stop()
  })

  const lookup = (account: string) => run('secret-tool', ['lookup', 'service', 'service-agents', 'account', account]).then((r) => r.stdout)

  it('stores tokens and client under service-agents, readable by another process, replacing not duplicating', async () => {
    const empty = await keychainPersistence({ server: 'demo' })
    expect(empty.tokens).toBeUndefined()
    await empty.onTokensChanged(tokens)
    await empty.onClientRegistered(client)
    expect(JSON.parse(await lookup('tokens:demo'))).toEqual(tokens)
    expect(JSON.parse(await lookup('client:demo'))).toEqual(client)
    await empty.onTokensChanged({ ...tokens, accessToken: 'at-rotated-0123456789' })
    const search = await run('secret-tool', ['search', '--all', 'service', 'service-agents', 'account', 'tokens:demo'])
    expect(search.stdout.match(/^\[\//gm)).toHaveLength(1)
    expect(search.stdout).toContain('label = service-agents/tokens:demo')
    const reread = await keychainPersistence({ server: 'demo' })
    expect(reread.tokens?.accessToken).toBe('at-rotated-0123456789')
    expect(reread.client).toEqual(client)
  })

  it('never puts the secret in argv (the store reads it from stdin)', async () => {
    const secret = `argv-probe-${Date.now()}`
    const seen: string[] = []
    const store = keychainStore()
    const watcher = setInterval(() => {
      const ps = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      seen.push(...ps.stdout.split('\n').filter((line) => line.includes('secret-tool')))
    }, 2)
    try {
      for (let round = 0; round < 5; round += 1) await store.set('probe:argv', secret)
    } finally {
      clearInterval(watcher)
    }
    expect(seen.some((line) => line.includes(secret))).toBe(false)
    expect(await store.get('probe:argv')).toBe(secret)
  })

  it('reads a missing item as undefined and deletes on logout and on removal', async () => {
    const store = keychainStore()
    expect(await store.get('tokens:nobody')).toBeUndefined()
    const demo = await keychainPersistence({ server: 'gone' })
    await demo.onTokensChanged(tokens)
    await demo.onClientRegistered(client)
    await forgetPersisted(store, 'gone', { client: false })
    expect(await store.get('tokens:gone')).toBeUndefined()
    expect(await store.get('client:gone')).toBeDefined()
    await forgetPersisted(store, 'gone', { client: true })
    expect(await store.get('client:gone')).toBeUndefined()
  })

  it('keeps an OAuth login across app restarts in the keychain, and deletes it when the server is removed', async () => {
    let issuer = ''
    const rs = await startMcpHttpServer({ kind: 'oauth', issuer: () => issuer })
    const as = await startAuthServer({ resource: rs.url })
    issuer = as.issuer
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-keychain-host-'))
    const settingsFile = join(dir, 'settings.json')
    await writeFile(settingsFile, JSON.stringify({ mcp: { servers: { kc: { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } } } } }))
    const startHost = async () => {
      const host = new McpHost({ workspace: null, settingsFile, secretStore: keychainStore() })
      await host.start()
      return host
    }
    try {
      const first = await startHost()
      expect(first.registry.describe('kc').state).toBe('needs-login')
      const { authorizeUrl } = await first.registry.login('kc')
      const done = first.registry.waitForLogin('kc')
      await fetch(await authorizeInBrowser(authorizeUrl))
      expect(await done).toBeNull()
      await first.close()
      expect(JSON.parse(await lookup('tokens:kc'))).toMatchObject({ accessToken: expect.any(String), refreshToken: expect.any(String) })
      expect(JSON.parse(await lookup('client:kc'))).toMatchObject({ clientId: expect.any(String), issuer: expect.stringContaining(as.issuer) })

      const second = await startHost()
      expect(second.registry.describe('kc').state).toBe('connected')
      expect(as.requests.filter((request) => request.path === '/auth')).toHaveLength(1)
      expect(await second.remove('kc')).toBe(true)
      expect(await keychainStore().get('tokens:kc')).toBeUndefined()
      expect(await keychainStore().get('client:kc')).toBeUndefined()
      await second.close()
    } finally {
      await as.stop()
      await rs.stop()
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('gives a typed error, not a hang, when there is no Secret Service on the bus', async () => {
    const saved = process.env.DBUS_SESSION_BUS_ADDRESS
    process.env.DBUS_SESSION_BUS_ADDRESS = 'unix:path=/nonexistent/syncscope-bus'
    try {
      const started = Date.now()
      const failure = await keychainStore({ timeoutMs: 3_000 }).get('tokens:demo').catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(KeychainError)
      expect(['unavailable', 'timeout', 'failed']).toContain((failure as KeychainError).reason)
      expect(Date.now() - started).toBeLessThan(5_000)
    } finally {
      process.env.DBUS_SESSION_BUS_ADDRESS = saved
    }
  })
})
