import { chmod, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { filePersistence } from '../../src/main/mcp/persistence/oauth-persistence'
import { fileSecretStore } from '../../src/main/mcp/persistence/secret-store'
import { aesGcmCipher } from './support/aes-cipher'
import { awkwardSecrets, client, folderForBlock, sameText, tokens, tokensJson } from './support/secrets'

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
