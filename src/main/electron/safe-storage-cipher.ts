import { safeStorage } from 'electron'
import type { FileEncryption } from '../mcp/persistence/file-store'

/**
 * Electron's safeStorage as the cipher of the MCP secrets file, used where no keychain answers. Call after `ready`.
 * On Linux without a Secret Service or KWallet, safeStorage falls back to a key built into Chromium (`basic_text`):
 * that protects nothing, so the file then stays plain 0600 and says so.
 */
export function safeStorageEncryption(): FileEncryption {
  if (!safeStorage.isEncryptionAvailable()) return { unavailable: 'Electron safeStorage has no encryption key here' }
  const backend = process.platform === 'linux' ? safeStorage.getSelectedStorageBackend() : null
  if (backend === 'basic_text' || backend === 'unknown') {
    return {
      unavailable: `Electron safeStorage would only use Chromium's built-in key (${backend}), which protects nothing`
    }
  }
  return {
    cipher: {
      name: `Electron safeStorage${backend ? ` (${backend})` : ''}`,
      encrypt: (plain) => safeStorage.encryptString(plain),
      decrypt: (sealed) => safeStorage.decryptString(sealed)
    }
  }
}
