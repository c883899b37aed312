import { chunkedStore } from './chunked-store'
import { legacySecretToolItems, macSecurityStore, secretToolStore, type LegacySecretToolItems } from './cli-keychain'
import { fileSecretStore, type FileEncryption } from './file-store'
import { KEYCHAIN_TIMEOUT_MS, KeychainError } from './keychain-error'
import { loadKeyringBinding, nativeKeychainStore, type KeyringBinding } from './native-keychain'
import type { SecretStore } from './store'

export { fileSecretStore, type FileEncryption, type SecretCipher } from './file-store'
export { KeychainError, type KeychainErrorReason } from './keychain-error'
export type { SecretStore } from './store'

/** The keychain service every Syncscope MCP secret is filed under. */
export const KEYCHAIN_SERVICE = 'service-agents'

export interface KeychainOptions {
  service?: string
  platform?: NodeJS.Platform
  timeoutMs?: number
  /** Loads @napi-rs/keyring; replaced only to show what happens where it cannot load. */
  loadBinding?: () => Promise<KeyringBinding>
  /** Longer values are kept in parts; by default only on Windows (2560 bytes of UTF-16 per credential). */
  maxItemChars?: number
}

/** 1280 UTF-16 units fill a Windows credential; the rest is margin. */
const WINDOWS_MAX_ITEM_CHARS = 1200

/** A token an earlier version stored with `secret-tool … account <name>` is moved to the current item when first read. */
function withLegacyItems(store: SecretStore, legacy: LegacySecretToolItems): SecretStore {
  return {
    kind: store.kind,
    description: store.description,
    async get(account) {
      const value = await store.get(account)
      if (value !== undefined) return value
      const old = await legacy.take(account)
      if (old === undefined) return undefined
      await store.set(account, old)
      await legacy.clear(account)
      return old
    },
    set: (account, value) => store.set(account, value),
    async delete(account) {
      await store.delete(account)
      await legacy.clear(account)
    }
  }
}

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''

/**
 * The OS keychain through the native binding (Keychain, Credential Manager, Secret Service); where the binding does
 * not load, `secret-tool` (Linux) or `security` (macOS). Windows without the binding has none and throws.
 */
export async function keychainStore(options: KeychainOptions = {}): Promise<SecretStore> {
  const service = options.service ?? KEYCHAIN_SERVICE
  const timeoutMs = options.timeoutMs ?? KEYCHAIN_TIMEOUT_MS
  const platform = options.platform ?? process.platform
  const legacy = () => legacySecretToolItems(service, timeoutMs)
  let binding: KeyringBinding
  try {
    binding = await (options.loadBinding ?? loadKeyringBinding)()
  } catch (error) {
    const why = `the native binding @napi-rs/keyring did not load: ${firstLine(error)}`
    if (platform === 'linux') return withLegacyItems(secretToolStore(service, timeoutMs, why), legacy())
    if (platform === 'darwin') return macSecurityStore(service, timeoutMs, why)
    throw new KeychainError('unsupported_platform', `no keychain on ${platform}: ${why}`)
  }
  const native = nativeKeychainStore(binding, service, platform, timeoutMs)
  const maxItemChars = options.maxItemChars ?? (platform === 'win32' ? WINDOWS_MAX_ITEM_CHARS : undefined)
  const store = maxItemChars ? chunkedStore(native, maxItemChars) : native
  return platform === 'linux' ? withLegacyItems(store, legacy()) : store
}

/**
 * The keychain when it answers a lookup, else the file `fallbackFile` (0600; its values encrypted where `encryption`
 * brings a cipher, as the Electron shell does with safeStorage). The store's description says which it picked and why.
 */
export async function detectSecretStore(
  fallbackFile: string,
  options: KeychainOptions & { encryption?: FileEncryption } = {}
): Promise<SecretStore> {
  const { encryption, ...keychain } = options
  let why: string
  try {
    const store = await keychainStore({ timeoutMs: 4_000, ...keychain })
    await store.get('probe:syncscope')
    return store
  } catch (error) {
    why = `no OS keychain: ${firstLine(error)}`
  }
  if (encryption && 'cipher' in encryption) return fileSecretStore(fallbackFile, { cipher: encryption.cipher, why })
  return fileSecretStore(fallbackFile, { why: encryption ? `${why}; ${encryption.unavailable}` : why })
}
