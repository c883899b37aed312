// Run as `node --import tsx detect-secret-store.ts <fallback file> [no-binding|encrypted|no-cipher]` with the
// environment under test: the binding reads DBUS_SESSION_BUS_ADDRESS once per process, so a different bus needs a
// process of its own. `encrypted` passes a real cipher the way the Electron shell passes safeStorage.
import {
  detectSecretStore,
  type KeychainOptions,
  type FileEncryption
} from '../../../src/main/mcp/persistence/secret-store'
import { aesGcmCipher } from './aes-cipher'

const NOT_INSTALLED: string = '@napi-rs/keyring-not-installed'

async function main(): Promise<void> {
  const [fallbackFile, mode] = process.argv.slice(2)
  const started = Date.now()
  const options: KeychainOptions & { encryption?: FileEncryption } =
    mode === 'no-binding'
      ? { loadBinding: () => import(NOT_INSTALLED) }
      : mode === 'encrypted'
        ? { encryption: { cipher: aesGcmCipher() } }
        : mode === 'no-cipher'
          ? { encryption: { unavailable: 'the cipher is unavailable in this test' } }
          : {}
  const store = await detectSecretStore(fallbackFile ?? '/nonexistent/secrets.json', options)
  await store.set('tokens:child', 'child-secret')
  await store.set('tokens:kept', 'kept-secret')
  const readBack = await store.get('tokens:child')
  await store.delete('tokens:child')
  const afterDelete = (await store.get('tokens:child')) ?? null
  process.stdout.write(
    JSON.stringify({
      kind: store.kind,
      description: store.description,
      readBack,
      afterDelete,
      ms: Date.now() - started
    })
  )
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).message}\n`)
  process.exit(1)
})
