import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { SecretCipher } from '../../../src/main/mcp/persistence/secret-store'

/** A real cipher (AES-256-GCM, random key per instance) standing where Electron's safeStorage stands in the app. */
export function aesGcmCipher(key = randomBytes(32)): SecretCipher {
  return {
    name: 'AES-256-GCM (test key)',
    encrypt(plain) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, iv)
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
      return Buffer.concat([iv, cipher.getAuthTag(), body])
    },
    decrypt(sealed) {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12))
      decipher.setAuthTag(sealed.subarray(12, 28))
      return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8')
    }
  }
}
