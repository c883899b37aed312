// Run as `node --import tsx detect-secret-store.ts <fallback file> [no-binding]` with the environment under test: the
// binding reads DBUS_SESSION_BUS_ADDRESS once per process, so a different bus needs a process of its own.
import { detectSecretStore } from '../../../src/main/mcp/persistence/secret-store'

const NOT_INSTALLED: string = '@napi-rs/keyring-not-installed'

async function main(): Promise<void> {
  const [fallbackFile, mode] = process.argv.slice(2)
  const started = Date.now()
  const store = await detectSecretStore(fallbackFile ?? '/nonexistent/secrets.json', mode === 'no-binding' ? { loadBinding: () => import(NOT_INSTALLED) } : {})
  await store.set('tokens:child', 'child-secret')
  const readBack = await store.get('tokens:child')
  await store.delete('tokens:child')
  process.stdout.write(JSON.stringify({ kind: store.kind, description: store.description, readBack, afterDelete: (await store.get('tokens:child')) ?? null, ms: Date.now() - started }))
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).message}\n`)
  process.exit(1)
})
