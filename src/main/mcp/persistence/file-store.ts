import { chmod, mkdir, readFile, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { z } from 'zod'
import { writeAtomically } from '../../fs/atomic-write'
import type { SecretStore } from './store'

/**
 * Encrypts the values of the secrets file. The Electron shell passes one backed by `safeStorage`; plain Node has
 * none, so `syncscope mcp` and `syncscope serve` keep the file as 0600 plain text.
 */
export interface SecretCipher {
  /** Names the protection for people, e.g. "Electron safeStorage (kwallet5)". */
  readonly name: string
  encrypt(plain: string): Buffer
  decrypt(sealed: Buffer): string
}

/** How the secrets file is protected beyond its mode: a cipher, or why there is none. */
export type FileEncryption = { cipher: SecretCipher } | { unavailable: string }

/** Reads a secrets file, refusing one that others could read. */
export async function readPrivateJson(path: string): Promise<Record<string, unknown>> {
  let mode: number
  try {
    mode = (await stat(path)).mode & 0o777
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw error
  }
  if (mode !== 0o600)
    throw new Error(
      `${path} has mode ${mode.toString(8).padStart(4, '0')}; a secrets file must be 0600 (chmod 600 ${path})`
    )
  const text = await readFile(path, 'utf8')
  if (text.trim() === '') return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    // JSON.parse quotes the text around the fault, and this text is secrets
    throw new Error(`${path} is not valid JSON; fix it or delete it (its secrets are then lost)`)
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error(`${path} does not hold a JSON object`)
  return parsed as Record<string, unknown>
}

/** Written through a temporary file created 0600 and renamed; the mode is set again whatever the umask did. A folder it creates is 0700. */
export async function writePrivateJson(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 })
  await writeAtomically(path, `${JSON.stringify(value, null, 2)}\n`, 0o600)
  await chmod(path, 0o600)
}

/** Serialises read-modify-write cycles on one file within this process. */
const fileLocks = new Map<string, Promise<unknown>>()
export function withFileLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  const previous = fileLocks.get(path) ?? Promise.resolve()
  const next = previous.then(work, work)
  fileLocks.set(
    path,
    next.catch(() => {})
  )
  return next
}

const SecretsFileSchema = z.object({
  secrets: z.record(z.string(), z.string()).optional(),
  encrypted: z.record(z.string(), z.string()).optional(),
  encryptedWith: z.string().optional()
})
type SecretsFile = z.infer<typeof SecretsFileSchema>

/**
 * Secrets in a 0600 JSON file, for machines without a keychain: `{ "secrets": { "<account>": "<value>" } }`, or with
 * a cipher `{ "encrypted": { "<account>": "<base64>" }, "encryptedWith": "…" }` (plain values left from before are
 * encrypted on the next write). `why` says why the secrets are here and not in the keychain.
 */
export function fileSecretStore(path: string, options: { cipher?: SecretCipher; why?: string } = {}): SecretStore {
  const { cipher, why } = options
  const load = async (): Promise<SecretsFile> => {
    const parsed = SecretsFileSchema.safeParse(await readPrivateJson(path))
    if (!parsed.success)
      throw new Error(
        `${path}: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`
      )
    return parsed.data
  }
  const update = (change: (secrets: Record<string, string>, encrypted: Record<string, string>) => void) =>
    withFileLock(path, async () => {
      const current = await load()
      const secrets = { ...current.secrets }
      const encrypted = { ...current.encrypted }
      change(secrets, encrypted)
      if (cipher) {
        for (const [account, value] of Object.entries(secrets))
          encrypted[account] = cipher.encrypt(value).toString('base64')
        for (const account of Object.keys(secrets)) delete secrets[account]
      }
      const hasEncrypted = Object.keys(encrypted).length > 0
      await writePrivateJson(path, {
        ...(Object.keys(secrets).length > 0 || !hasEncrypted ? { secrets } : {}),
        ...(hasEncrypted ? { encrypted, encryptedWith: cipher?.name ?? current.encryptedWith } : {})
      })
    })
  const protection = cipher ? `encrypted with ${cipher.name}` : 'plain text'
  return {
    kind: 'file',
    description: `${path} (mode 0600), ${protection}${why ? `; ${why}` : ''}`,
    async get(account) {
      const data = await load()
      const sealed = data.encrypted?.[account]
      if (sealed === undefined) return data.secrets?.[account]
      if (!cipher)
        throw new Error(
          `${account} in ${path} is encrypted with ${data.encryptedWith ?? 'a cipher'}; only the Syncscope app can read it`
        )
      try {
        return cipher.decrypt(Buffer.from(sealed, 'base64'))
      } catch {
        throw new Error(
          `${account} in ${path} cannot be decrypted with ${cipher.name} (written by another user or machine?); store it again`
        )
      }
    },
    set: (account, value) =>
      update((secrets, encrypted) => {
        secrets[account] = value
        delete encrypted[account]
      }),
    delete: (account) =>
      update((secrets, encrypted) => {
        delete secrets[account]
        delete encrypted[account]
      })
  }
}
