import type { AsyncEntry, EntryOptions } from '@napi-rs/keyring'
import { classifyKeychainFailure, KeychainError, withKeychainTimeout } from './keychain-error'
import type { SecretStore } from './store'

/** The part of @napi-rs/keyring we use: N-API, prebuilt for each platform, so Electron needs no rebuild. */
export interface KeyringBinding {
  AsyncEntry: typeof AsyncEntry
}

/** Loads the binding; throws where no prebuilt binary fits this platform or the install is broken. */
export async function loadKeyringBinding(): Promise<KeyringBinding> {
  const binding = (await import('@napi-rs/keyring')) as KeyringBinding & { default?: KeyringBinding }
  return binding.AsyncEntry ? binding : (binding.default as KeyringBinding)
}

const STORE_NAMES: Partial<Record<NodeJS.Platform, string>> = {
  linux: 'Secret Service',
  darwin: 'macOS Keychain',
  win32: 'Windows Credential Manager'
}

export function keychainName(platform: NodeJS.Platform): string {
  return STORE_NAMES[platform] ?? `the ${platform} keychain`
}

/**
 * The OS keychain through the binding. On Linux it is pinned to the Secret Service: the binding's own fallback, the
 * kernel keyring, forgets everything at logout, which is no place for a refresh token.
 */
export function nativeKeychainStore(
  binding: KeyringBinding,
  service: string,
  platform: NodeJS.Platform,
  timeoutMs: number
): SecretStore {
  const options: EntryOptions | undefined = platform === 'linux' ? { linux: { store: 'secret-service' } } : undefined
  const name = keychainName(platform)
  // The binding may throw synchronously (e.g. no session bus), so every call starts inside an async function.
  const call = async <T>(what: string, account: string, work: (entry: AsyncEntry) => Promise<T>): Promise<T> => {
    try {
      return await withKeychainTimeout(
        (async () => work(new binding.AsyncEntry(service, account, options)))(),
        timeoutMs,
        `${name} (${what})`
      )
    } catch (error) {
      if (error instanceof KeychainError) throw error
      throw classifyKeychainFailure(`${name} ${what}`, error instanceof Error ? error.message : String(error))
    }
  }
  return {
    kind: 'keychain',
    description: `${name} via @napi-rs/keyring, service ${service}`,
    get: (account) => call('get', account, async (entry) => (await entry.getPassword()) ?? undefined),
    set: (account, value) => call('set', account, (entry) => entry.setPassword(value)),
    delete: (account) => call('delete', account, async (entry) => void (await entry.deletePassword()))
  }
}
