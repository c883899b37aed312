import { chmod, readFile } from 'node:fs/promises'
import { exportJWK, generateKeyPair, generateSecret, importJWK, type CryptoKey, type JWK } from 'jose'
import { z } from 'zod'
import { writeAtomically } from '../fs/atomic-write'
import type { SigningAlgorithm } from './config'

export interface SigningKey {
  alg: SigningAlgorithm
  kid: string
  privateKey: CryptoKey | Uint8Array
  verifyKey: CryptoKey | Uint8Array
}

const KeyFileSchema = z.record(z.string(), z.looseObject({ kty: z.string(), kid: z.string() }))

const PRIVATE_FIELDS = ['d', 'p', 'q', 'dp', 'dq', 'qi']

/** The app's own signing keys, one per algorithm, created on first use and kept (0600) in the data folder. */
export class SigningKeys {
  private readonly cache = new Map<SigningAlgorithm, Promise<SigningKey>>()
  /** Key creations run one after another: each rewrites the whole file. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(private readonly file: string) {}

  key(alg: SigningAlgorithm): Promise<SigningKey> {
    let key = this.cache.get(alg)
    if (!key) {
      key = this.queue.then(() => this.loadOrCreate(alg))
      this.queue = key.catch(() => undefined)
      this.cache.set(alg, key)
      key.catch(() => this.cache.delete(alg))
    }
    return key
  }

  private async readFile(): Promise<Record<string, JWK>> {
    try {
      return KeyFileSchema.parse(JSON.parse(await readFile(this.file, 'utf8'))) as Record<string, JWK>
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw new Error(
        `the proxy signing keys in ${this.file} are unreadable (${(error as Error).message}); move the file away to create new keys`,
        { cause: error }
      )
    }
  }

  private async loadOrCreate(alg: SigningAlgorithm): Promise<SigningKey> {
    const stored = await this.readFile()
    let jwk = stored[alg]
    if (!jwk) {
      jwk = await newKey(alg)
      await writeAtomically(this.file, `${JSON.stringify({ ...stored, [alg]: jwk }, null, 2)}\n`, 0o600)
      await chmod(this.file, 0o600)
    }
    const publicJwk = Object.fromEntries(Object.entries(jwk).filter(([field]) => !PRIVATE_FIELDS.includes(field)))
    return {
      alg,
      kid: jwk.kid as string,
      privateKey: await importJWK(jwk, alg),
      verifyKey: alg === 'HS256' ? await importJWK(jwk, alg) : await importJWK(publicJwk, alg)
    }
  }
}

async function newKey(alg: SigningAlgorithm): Promise<JWK> {
  const key =
    alg === 'HS256'
      ? await generateSecret(alg, { extractable: true })
      : (await generateKeyPair(alg, { extractable: true })).privateKey
  const jwk = await exportJWK(key)
  return { ...jwk, alg, kid: `syncscope-${alg.toLowerCase()}-${Date.now().toString(36)}` }
}
