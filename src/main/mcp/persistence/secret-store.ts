import { spawn } from 'node:child_process'
import { chmod, mkdir, readFile, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { writeAtomically } from '../../fs/atomic-write'

/** The keychain service every Syncscope MCP secret is filed under. */
export const KEYCHAIN_SERVICE = 'service-agents'

/** Where secrets live: the OS keychain, or a 0600 JSON file where there is none. */
export interface SecretStore {
  readonly kind: 'keychain' | 'file'
  readonly description: string
  get(account: string): Promise<string | undefined>
  set(account: string, value: string): Promise<void>
  delete(account: string): Promise<void>
}

export type KeychainErrorReason = 'unsupported_platform' | 'unavailable' | 'locked' | 'timeout' | 'failed'

/** The keychain could not be used; `reason` says why, the message never contains a secret. */
export class KeychainError extends Error {
  constructor(
    readonly reason: KeychainErrorReason,
    message: string
  ) {
    super(message)
    this.name = 'KeychainError'
  }
}

/** D-Bus activation may wait 25 s for a keyring that never answers; a keychain call gives up well before. */
const KEYCHAIN_TIMEOUT_MS = 8_000

interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

function run(command: string, args: string[], input: string | null, timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new KeychainError('timeout', `${command} did not answer within ${timeoutMs / 1000} s (is the keyring locked, or D-Bus missing?)`))
    }, timeoutMs)
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      reject(new KeychainError('unavailable', error.code === 'ENOENT' ? `${command} is not installed` : `${command}: ${error.message}`))
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(input ?? undefined)
  })
}

function classify(command: string, stderr: string): KeychainError {
  const text = stderr.trim()
  if (/locked|prompt|dismissed|collection\/login/i.test(text)) return new KeychainError('locked', `the keyring is locked (${command}: ${text})`)
  if (/D-?Bus|autolaunch|org\.freedesktop\.secrets|ServiceUnknown|Cannot autolaunch/i.test(text)) return new KeychainError('unavailable', `no Secret Service on the session bus (${command}: ${text})`)
  return new KeychainError('failed', `${command} failed: ${text || 'no message'}`)
}

/** Linux Secret Service through `secret-tool`: the secret goes on stdin, never in argv. */
function secretToolStore(service: string, timeoutMs: number): SecretStore {
  const attributes = (account: string) => ['service', service, 'account', account]
  return {
    kind: 'keychain',
    description: `Secret Service (secret-tool), service ${service}`,
    async get(account) {
      const result = await run('secret-tool', ['lookup', ...attributes(account)], null, timeoutMs)
      if (result.code === 0) return result.stdout.replace(/\n$/, '')
      if (result.code === 1 && result.stderr.trim() === '') return undefined
      throw classify('secret-tool lookup', result.stderr)
    },
    async set(account, value) {
      const result = await run('secret-tool', ['store', `--label=${service}/${account}`, ...attributes(account)], value, timeoutMs)
      if (result.code !== 0) throw classify('secret-tool store', result.stderr)
    },
    async delete(account) {
      const result = await run('secret-tool', ['clear', ...attributes(account)], null, timeoutMs)
      if (result.code !== 0 && result.stderr.trim() !== '') throw classify('secret-tool clear', result.stderr)
    }
  }
}

/**
 * macOS `security`. Its add command only takes the secret as an argument, so the value is visible in the process
 * list for the moment the command runs; that is the price of working without a native binding.
 */
function macKeychainStore(service: string, timeoutMs: number): SecretStore {
  return {
    kind: 'keychain',
    description: `macOS Keychain, service ${service}`,
    async get(account) {
      const result = await run('security', ['find-generic-password', '-s', service, '-a', account, '-w'], null, timeoutMs)
      if (result.code === 0) return result.stdout.replace(/\n$/, '')
      if (/could not be found/i.test(result.stderr)) return undefined
      throw classify('security find-generic-password', result.stderr)
    },
    async set(account, value) {
      const result = await run('security', ['add-generic-password', '-U', '-s', service, '-a', account, '-w', value], null, timeoutMs)
      if (result.code !== 0) throw classify('security add-generic-password', result.stderr)
    },
    async delete(account) {
      const result = await run('security', ['delete-generic-password', '-s', service, '-a', account], null, timeoutMs)
      if (result.code !== 0 && !/could not be found/i.test(result.stderr)) throw classify('security delete-generic-password', result.stderr)
    }
  }
}

/** The OS keychain: Secret Service on Linux, the Keychain on macOS; Windows has no backend and throws. */
export function keychainStore(options: { service?: string; platform?: NodeJS.Platform; timeoutMs?: number } = {}): SecretStore {
  const service = options.service ?? KEYCHAIN_SERVICE
  const timeoutMs = options.timeoutMs ?? KEYCHAIN_TIMEOUT_MS
  const platform = options.platform ?? process.platform
  if (platform === 'linux') return secretToolStore(service, timeoutMs)
  if (platform === 'darwin') return macKeychainStore(service, timeoutMs)
  throw new KeychainError('unsupported_platform', `the keychain store supports macOS and Linux, not ${platform}: use filePersistence({ path, server }) instead`)
}

/** Reads a secrets file, refusing one that others could read. */
export async function readPrivateJson(path: string): Promise<Record<string, unknown>> {
  let mode: number
  try {
    mode = (await stat(path)).mode & 0o777
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw error
  }
  if (mode !== 0o600) throw new Error(`${path} has mode ${mode.toString(8).padStart(4, '0')}; a secrets file must be 0600 (chmod 600 ${path})`)
  const text = await readFile(path, 'utf8')
  if (text.trim() === '') return {}
  const parsed: unknown = JSON.parse(text)
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${path} does not hold a JSON object`)
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
  fileLocks.set(path, next.catch(() => {}))
  return next
}

/** Secrets in a 0600 JSON file `{ "secrets": { "<account>": "<value>" } }`, for machines without a keychain. */
export function fileSecretStore(path: string): SecretStore {
  const secretsOf = async () => {
    const root = await readPrivateJson(path)
    return (root.secrets && typeof root.secrets === 'object' ? root.secrets : {}) as Record<string, string>
  }
  const update = (change: (secrets: Record<string, string>) => void) =>
    withFileLock(path, async () => {
      const secrets = await secretsOf()
      change(secrets)
      await writePrivateJson(path, { secrets })
    })
  return {
    kind: 'file',
    description: `${path} (mode 0600)`,
    get: async (account) => (await secretsOf())[account],
    set: (account, value) => update((secrets) => void (secrets[account] = value)),
    delete: (account) => update((secrets) => void delete secrets[account])
  }
}

/** The keychain when it answers a lookup, else the file; says which it picked. */
export async function detectSecretStore(fallbackFile: string): Promise<SecretStore> {
  try {
    const store = keychainStore({ timeoutMs: 4_000 })
    await store.get('probe:syncscope')
    return store
  } catch {
    return fileSecretStore(fallbackFile)
  }
}
