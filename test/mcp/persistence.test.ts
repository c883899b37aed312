import { execFile } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { filePersistence, keychainPersistence, forgetPersisted } from '../../src/main/mcp/persistence/oauth-persistence'
import { parseSecurityPassword } from '../../src/main/mcp/persistence/cli-keychain'
import {
  fileSecretStore,
  keychainStore,
  KeychainError,
  type SecretStore
} from '../../src/main/mcp/persistence/secret-store'
import { McpHost } from '../../src/main/mcp/host'
import { boundName, entryBinding } from '../../src/main/mcp/persistence/binding'
import { aesGcmCipher } from './support/aes-cipher'
import { watchArgv } from './support/argv-watch'
import { describeWith } from '../support/facility-tests'
import { startHeadlessKeyring, type HeadlessKeyring } from './support/keyring'
import { startMcpHttpServer } from './support/mcp-http-server'
import { authorizeInBrowser, startAuthServer } from './support/oauth-server'

const run = promisify(execFile)
const tokens = { accessToken: 'at-0123456789abcdef', refreshToken: 'rt-0123456789abcdef', expiresAt: 2_000_000_000 }
const tokensJson = JSON.stringify(tokens)
const NOT_INSTALLED: string = '@napi-rs/keyring-not-installed'
/** Values a store must give back byte for byte. */
const awkwardSecrets = {
  json: JSON.stringify({
    accessToken: 'at-'.padEnd(1200, 'x'),
    refreshToken: 'rt-0123456789abcdef',
    expiresAt: 2_000_000_000
  }),
  unicode: 'pässwörd ✓ 😀 日本',
  newlines: 'line one\nline two',
  trailingNewline: 'ends with a newline\n',
  spaces: '  leading and trailing  ',
  shell: `'"\\$(id)\`;|&<>`,
  large: 'x'.repeat(64 * 1024)
}
/** Equality without printing 64 KiB into the report when it fails. */
const sameText = (actual: string | undefined, expected: string) =>
  actual === expected || `${actual?.length ?? 'undefined'} characters, expected ${expected.length}`
const client = {
  clientId: 'client-1',
  issuer: 'http://127.0.0.1:1/',
  redirect_uris: ['http://127.0.0.1:2/oauth/callback/demo'],
  client_id_issued_at: 1
}

/** A fresh folder for the describe block that calls this, removed after it. */
function folderForBlock(prefix: string): () => string {
  let dir = ''
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))
  return () => dir
}

describe('filePersistence (0600 JSON)', () => {
  const dir = folderForBlock('syncscope-file-persistence-')

  it('writes 0600 even under umask 000, keeps every server and the registration metadata as returned', async () => {
    const path = join(dir(), 'nested', 'oauth.json')
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
    expect((await stat(join(dir(), 'nested'))).mode & 0o777).toBe(0o700)
    const again = await filePersistence({ path, server: 'demo' })
    expect(again.tokens).toEqual(tokens)
    expect(again.client).toEqual(client)
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({
      tokens: { demo: tokens, other: { accessToken: 'other-token' } }
    })
  })

  it('loses no update when writes race', async () => {
    const path = join(dir(), 'race.json')
    const slices = await Promise.all(['a', 'b', 'c', 'd'].map((server) => filePersistence({ path, server })))
    await Promise.all(slices.map((slice, index) => slice.onTokensChanged({ accessToken: `token-${index}` })))
    expect(Object.keys((JSON.parse(await readFile(path, 'utf8')) as { tokens: object }).tokens).sort()).toEqual([
      'a',
      'b',
      'c',
      'd'
    ])
  })

  it('refuses to read a file other users could read (0644), and 0400', async () => {
    const path = join(dir(), 'loose.json')
    await writeFile(path, JSON.stringify({ tokens: { demo: tokens } }), { mode: 0o644 })
    await chmod(path, 0o644)
    await expect(filePersistence({ path, server: 'demo' })).rejects.toThrow(/mode 0644; a secrets file must be 0600/)
    await chmod(path, 0o400)
    await expect(filePersistence({ path, server: 'demo' })).rejects.toThrow(/mode 0400/)
  })

  it('stores plain secrets for machines without a keychain', async () => {
    const store = fileSecretStore(join(dir(), 'secrets.json'))
    await store.set('secret:api:auth.key', 'k-1')
    expect(await store.get('secret:api:auth.key')).toBe('k-1')
    await store.delete('secret:api:auth.key')
    expect(await store.get('secret:api:auth.key')).toBeUndefined()
  })
})

describe('fileSecretStore with a cipher (the Electron shell passes safeStorage)', () => {
  const dir = folderForBlock('syncscope-sealed-store-')

  it('keeps only ciphertext on disk (0600) and round-trips every value', async () => {
    const path = join(dir(), 'sealed.json')
    const store = fileSecretStore(path, { cipher: aesGcmCipher(), why: 'no OS keychain: test' })
    expect(store.description).toBe(`${path} (mode 0600), encrypted with AES-256-GCM (test key); no OS keychain: test`)
    for (const value of Object.values(awkwardSecrets)) {
      await store.set('tokens:demo', value)
      expect(sameText(await store.get('tokens:demo'), value)).toBe(true)
    }
    await store.set('tokens:demo', tokensJson)
    const disk = await readFile(path, 'utf8')
    expect(disk).not.toContain(tokens.accessToken)
    expect(JSON.parse(disk)).toMatchObject({
      encryptedWith: 'AES-256-GCM (test key)',
      encrypted: { 'tokens:demo': expect.any(String) }
    })
    expect((await stat(path)).mode & 0o777).toBe(0o600)
    await store.delete('tokens:demo')
    expect(await store.get('tokens:demo')).toBeUndefined()
  })

  it('encrypts the plain values left from before on its next write', async () => {
    const path = join(dir(), 'upgrade.json')
    await fileSecretStore(path).set('client:old', 'plain-client-secret')
    expect(await readFile(path, 'utf8')).toContain('plain-client-secret')
    const sealed = fileSecretStore(path, { cipher: aesGcmCipher() })
    expect(await sealed.get('client:old')).toBe('plain-client-secret')
    await sealed.set('tokens:new', 'new-token')
    expect(await readFile(path, 'utf8')).not.toContain('plain-client-secret')
    expect(await sealed.get('client:old')).toBe('plain-client-secret')
  })

  it('refuses, with the reason, an encrypted value it has no key for (never reads it as missing)', async () => {
    const path = join(dir(), 'foreign.json')
    await fileSecretStore(path, { cipher: aesGcmCipher() }).set('tokens:demo', tokensJson)
    await expect(fileSecretStore(path).get('tokens:demo')).rejects.toThrow(
      /tokens:demo in .* is encrypted with AES-256-GCM \(test key\); only the Syncscope app can read it/
    )
    await expect(fileSecretStore(path, { cipher: aesGcmCipher() }).get('tokens:demo')).rejects.toThrow(
      /cannot be decrypted with AES-256-GCM/
    )
  })

  it('refuses a damaged file without quoting its content', async () => {
    const path = join(dir(), 'damaged.json')
    await writeFile(path, '{"secrets": {"tokens:demo": "at-visible-secret"', { mode: 0o600 })
    const failure = (await fileSecretStore(path)
      .get('tokens:demo')
      .catch((error: unknown) => error)) as Error
    expect(failure.message).toMatch(/is not valid JSON; fix it or delete it/)
    expect(failure.message).not.toContain('at-visible-secret')
  })
})

describe('which keychain backend is picked where the binding cannot load', () => {
  const notInstalled = () => import(NOT_INSTALLED)

  it('Linux: secret-tool, saying why', async () => {
    const store = await keychainStore({ platform: 'linux', loadBinding: notInstalled })
    expect(store.description).toMatch(
      /^Secret Service via secret-tool, service service-agents \(the native binding @napi-rs\/keyring did not load: .*keyring-not-installed/
    )
  })

  it('macOS: the security tool, saying why', async () => {
    const store = await keychainStore({ platform: 'darwin', loadBinding: notInstalled })
    expect(store.description).toMatch(
      /^macOS Keychain via the security tool, service service-agents \(the native binding @napi-rs\/keyring did not load/
    )
  })

  it('Windows: no keychain at all, a typed error that names the cause', async () => {
    const failure = await keychainStore({ platform: 'win32', loadBinding: notInstalled }).catch(
      (error: unknown) => error
    )
    expect(failure).toBeInstanceOf(KeychainError)
    expect((failure as KeychainError).reason).toBe('unsupported_platform')
    expect((failure as KeychainError).message).toMatch(
      /no keychain on win32: the native binding @napi-rs\/keyring did not load/
    )
  })
})

describe('reading what `security find-generic-password -g` prints (macOS, where the binding cannot load)', () => {
  it('takes a printable value from its quotes and any other from its hex, never mistaking one for the other', () => {
    const printed = (line: string) => `keychain: "/Users/me/Library/Keychains/login.keychain-db"\n${line}\n`
    expect(parseSecurityPassword(printed('password: "{"accessToken":"at-1"}"'))).toBe('{"accessToken":"at-1"}')
    expect(parseSecurityPassword(printed('password: "cafe"'))).toBe('cafe')
    const unicode = 'pässwörd ✓ 😀'
    expect(
      parseSecurityPassword(
        printed(`password: 0x${Buffer.from(unicode).toString('hex').toUpperCase()}  "p\\303\\244ssw..."`)
      )
    ).toBe(unicode)
    expect(
      parseSecurityPassword(printed(`password: 0x${Buffer.from('a\\b').toString('hex').toUpperCase()}  "a\\134b"`))
    ).toBe('a\\b')
    expect(parseSecurityPassword(printed('password: '))).toBe('')
    expect(() => parseSecurityPassword('keychain: "x"\n')).toThrow(KeychainError)
  })
})

describeWith(
  ['linux', 'dbus', 'keyring'],
  'the real Secret Service on a private D-Bus session (gnome-keyring-daemon), through the native binding and secret-tool',
  () => {
    let keyring: HeadlessKeyring
    let native: SecretStore
    let cli: SecretStore
    beforeAll(async () => {
      keyring = await startHeadlessKeyring()
      // The binding reads the bus address once, at its first call in this process: nothing above has called it.
      process.env.DBUS_SESSION_BUS_ADDRESS = keyring.address
      native = await keychainStore()
      cli = await keychainStore({ loadBinding: () => import(NOT_INSTALLED) })
    })
    afterAll(async () => {
      await keyring?.stop()
    })

    const secretTool = (args: string[]) => run('secret-tool', args).then((result) => result.stdout)
    const lookup = (account: string, attribute = 'username') =>
      secretTool(['lookup', 'service', 'service-agents', attribute, account])
    const storeWithSecretTool = (account: string, value: string, attribute = 'username') =>
      new Promise<void>((resolve, reject) => {
        const child = execFile(
          'secret-tool',
          ['store', '--label=by secret-tool', 'service', 'service-agents', attribute, account],
          (error) => (error ? reject(error) : resolve())
        )
        child.stdin?.end(value)
      })

    it('stores through the native binding; every secret round-trips and secret-tool reads the same item', async () => {
      expect(native.description).toBe('Secret Service via @napi-rs/keyring, service service-agents')
      for (const [name, value] of Object.entries(awkwardSecrets)) {
        await native.set(`secret:roundtrip:${name}`, value)
        expect(sameText(await native.get(`secret:roundtrip:${name}`), value), name).toBe(true)
        expect(sameText(await lookup(`secret:roundtrip:${name}`), value), name).toBe(true)
      }
    })

    it('reads what secret-tool stored, and the CLI fallback reads and writes the same items as the binding', async () => {
      await storeWithSecretTool('secret:by-tool', tokensJson)
      expect(await native.get('secret:by-tool')).toBe(tokensJson)
      expect(cli.description).toMatch(
        /^Secret Service via secret-tool, service service-agents \(the native binding @napi-rs\/keyring did not load/
      )
      const { large: _tooLargeForSecretTool, ...fitting } = awkwardSecrets
      for (const [name, value] of Object.entries(fitting)) {
        await cli.set(`secret:cli:${name}`, value)
        expect(sameText(await cli.get(`secret:cli:${name}`), value), name).toBe(true)
        expect(sameText(await native.get(`secret:cli:${name}`), value), name).toBe(true)
      }
      await native.set('secret:from-native', 'n-1')
      expect(await cli.get('secret:from-native')).toBe('n-1')
    })

    it('refuses, in the secret-tool fallback, a secret longer than secret-tool keeps whole (it would cut it and exit 0)', async () => {
      await native.set('secret:cli:large', 'previous')
      await expect(cli.set('secret:cli:large', awkwardSecrets.large)).rejects.toThrow(
        /is 65536 bytes, more than secret-tool stores whole \(8191\)/
      )
      expect(await cli.get('secret:cli:large')).toBe('previous')
    })

    it('finds a token an earlier version stored (secret-tool, attribute account) and moves it to the current item', async () => {
      await storeWithSecretTool('tokens:legacy', tokensJson, 'account')
      await storeWithSecretTool('client:legacy', JSON.stringify(client), 'account')
      const persisted = await keychainPersistence({ server: 'legacy' })
      expect(persisted.tokens).toEqual(tokens)
      expect(persisted.client).toEqual(client)
      expect(JSON.parse(await lookup('tokens:legacy'))).toEqual(tokens)
      await expect(lookup('tokens:legacy', 'account')).rejects.toMatchObject({ code: 1 })
    })

    it('deletes: logout forgets the tokens, removal the client too, a legacy copy included; a missing item reads as undefined', async () => {
      expect(await native.get('tokens:nobody')).toBeUndefined()
      await native.delete('tokens:nobody')
      const demo = await keychainPersistence({ server: 'gone' })
      await demo.onTokensChanged(tokens)
      await demo.onClientRegistered(client)
      await storeWithSecretTool('tokens:gone', 'stale-legacy-token', 'account')
      await forgetPersisted(native, 'gone', { client: false })
      expect(await native.get('tokens:gone')).toBeUndefined()
      await expect(lookup('tokens:gone', 'account')).rejects.toMatchObject({ code: 1 })
      expect(await native.get('client:gone')).toBeDefined()
      await forgetPersisted(native, 'gone', { client: true })
      expect(await native.get('client:gone')).toBeUndefined()
      await expect(lookup('client:gone')).rejects.toMatchObject({ code: 1 })
      await cli.set('secret:cli-delete', 'x')
      await cli.delete('secret:cli-delete')
      expect(await native.get('secret:cli-delete')).toBeUndefined()
    })

    it('keeps a value longer than one item holds (a Windows credential: 2560 bytes) in parts: round-trips, shrinks and deletes without leftovers', async () => {
      const itemsOf = async (account: string) => {
        const { stderr: attributes } = await run('secret-tool', ['search', '--all', 'service', 'service-agents']) // attributes go to stderr
        return attributes
          .split('\n')
          .filter(
            (line) => line === `attribute.username = ${account}` || line.startsWith(`attribute.username = ${account}#`)
          ).length
      }
      const parted = await keychainStore({ maxItemChars: 1000 })
      const { large, ...smaller } = awkwardSecrets
      for (const [name, value] of Object.entries(smaller)) {
        await parted.set(`secret:parts:${name}`, value)
        expect(sameText(await parted.get(`secret:parts:${name}`), value), name).toBe(true)
      }
      const pairs = `a${'😀'.repeat(40)}`
      const tiny = await keychainStore({ maxItemChars: 4 })
      await tiny.set('secret:parts:pairs', pairs)
      expect(await tiny.get('secret:parts:pairs')).toBe(pairs)

      const roomy = await keychainStore({ maxItemChars: 8192 })
      await roomy.set('tokens:parts', large)
      expect(sameText(await roomy.get('tokens:parts'), large)).toBe(true)
      expect(await itemsOf('tokens:parts')).toBe(1 + 8)
      expect(await lookup('tokens:parts')).not.toContain('xxxx')
      await parted.set('tokens:parts', awkwardSecrets.json)
      expect(await itemsOf('tokens:parts')).toBe(1 + 2)
      await parted.set('tokens:parts', 'short')
      expect(await itemsOf('tokens:parts')).toBe(1)
      expect(await parted.get('tokens:parts')).toBe('short')
      await parted.set('tokens:parts', awkwardSecrets.json)
      await parted.delete('tokens:parts')
      expect(await itemsOf('tokens:parts')).toBe(0)
      expect(await parted.get('tokens:parts')).toBeUndefined()
    })

    it('never shows a secret in any command line (/proc/*/cmdline) while storing, through the binding or secret-tool', async () => {
      const control = `argv-control-${Date.now()}`
      const controlWatch = watchArgv()
      await run(process.execPath, ['-e', 'setTimeout(() => {}, 200)', control])
      expect((await controlWatch.stop()).some((line) => line.includes(control))).toBe(true)

      for (const [name, store] of [
        ['binding', native],
        ['secret-tool', cli]
      ] as const) {
        const secret = `argv-probe-${name}-${Date.now()}`
        const watch = watchArgv()
        for (let round = 0; round < 5; round += 1) await store.set('probe:argv', `${secret}-${round}`)
        const seen = await watch.stop()
        expect(
          seen.filter((line) => line.includes(secret)),
          name
        ).toEqual([])
        if (name === 'secret-tool') expect(seen.some((line) => line.startsWith('secret-tool store'))).toBe(true)
        expect(await store.get('probe:argv')).toBe(`${secret}-4`)
      }
    })

    it('keeps an OAuth login across app restarts in the keychain, and deletes it when the server is removed', async () => {
      let issuer = ''
      const rs = await startMcpHttpServer({ kind: 'oauth', issuer: () => issuer })
      const as = await startAuthServer({ resource: rs.url })
      issuer = as.issuer
      const dir = await mkdtemp(join(tmpdir(), 'syncscope-keychain-host-'))
      const settingsFile = join(dir, 'settings.json')
      await writeFile(
        settingsFile,
        JSON.stringify({
          mcp: { servers: { kc: { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } } } }
        })
      )
      const startHost = async () => {
        const host = new McpHost({ workspace: null, settingsFile, secretStore: native })
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
        // kept under the server's name and URL: `tokens:kc@<digest of the URL>`
        const kc = boundName({ name: 'kc', binding: entryBinding({ transport: 'http', url: rs.url }) })
        expect(JSON.parse(await lookup(`tokens:${kc}`))).toMatchObject({
          accessToken: expect.any(String),
          refreshToken: expect.any(String)
        })
        expect(JSON.parse(await lookup(`client:${kc}`))).toMatchObject({
          clientId: expect.any(String),
          issuer: expect.stringContaining(as.issuer)
        })

        const second = await startHost()
        expect(second.registry.describe('kc').state).toBe('connected')
        expect(as.requests.filter((request) => request.path === '/auth')).toHaveLength(1)
        expect(await second.remove('kc')).toBe(true)
        expect(await native.get(`tokens:${kc}`)).toBeUndefined()
        expect(await native.get(`client:${kc}`)).toBeUndefined()
        await second.close()
      } finally {
        await as.stop()
        await rs.stop()
        await rm(dir, { recursive: true, force: true })
      }
    })

    describe('the choice a fresh process makes (the binding reads the bus address once per process)', () => {
      const dir = folderForBlock('syncscope-detect-')

      const detectInChild = async (busAddress: string, mode?: 'no-binding' | 'encrypted' | 'no-cipher') => {
        const file = join(dir(), `secrets-${Date.now()}.json`)
        const { stdout } = await run(
          process.execPath,
          ['--import', 'tsx', 'test/mcp/support/detect-secret-store.ts', file, ...(mode ? [mode] : [])],
          {
            env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: busAddress }
          }
        )
        return {
          file,
          result: JSON.parse(stdout) as {
            kind: string
            description: string
            readBack: string
            afterDelete: string | null
            ms: number
          }
        }
      }

      it('picks the binding when the Secret Service answers, secret-tool when the binding cannot load', async () => {
        const { result: native } = await detectInChild(keyring.address)
        expect(native).toMatchObject({
          kind: 'keychain',
          description: 'Secret Service via @napi-rs/keyring, service service-agents',
          readBack: 'child-secret',
          afterDelete: null
        })
        const { result: cli } = await detectInChild(keyring.address, 'no-binding')
        expect(cli).toMatchObject({ kind: 'keychain', readBack: 'child-secret', afterDelete: null })
        expect(cli.description).toMatch(/via secret-tool.*did not load/)
      })

      it('falls back to the 0600 file with no Secret Service on the bus, without waiting for a D-Bus timeout, and says why', async () => {
        const { file, result } = await detectInChild('unix:path=/nonexistent/syncscope-bus')
        expect(result).toMatchObject({ kind: 'file', readBack: 'child-secret', afterDelete: null })
        expect(result.description).toMatch(
          new RegExp(
            `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(mode 0600\\), plain text; no OS keychain: no Secret Service on the session bus`
          )
        )
        expect(result.ms).toBeLessThan(15_000) // not the 25 s of a D-Bus activation timeout
        expect((await stat(file)).mode & 0o777).toBe(0o600)
      })

      it('encrypts that file where the shell brings a cipher (as Electron does with safeStorage), and says when it cannot', async () => {
        const noBus = 'unix:path=/nonexistent/syncscope-bus'
        const { file, result } = await detectInChild(noBus, 'encrypted')
        expect(result).toMatchObject({ kind: 'file', readBack: 'child-secret', afterDelete: null })
        expect(result.description).toMatch(
          /\(mode 0600\), encrypted with AES-256-GCM \(test key\); no OS keychain: no Secret Service on the session bus/
        )
        const disk = await readFile(file, 'utf8')
        expect(disk).not.toContain('kept-secret')
        expect(JSON.parse(disk)).toMatchObject({ encrypted: { 'tokens:kept': expect.any(String) } })
        const { result: plain } = await detectInChild(noBus, 'no-cipher')
        expect(plain.description).toMatch(
          /\(mode 0600\), plain text; no OS keychain: .*; the cipher is unavailable in this test$/
        )
      })
    })
  }
)
