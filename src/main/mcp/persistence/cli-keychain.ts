import { spawn } from 'node:child_process'
import { classifyKeychainFailure, KeychainError } from './keychain-error'
import type { SecretStore } from './store'

/*
 * The keychain through its command-line tools: the fallback where the native binding (@napi-rs/keyring) does not load.
 * Secrets travel on stdin, never in argv. Items use the binding's naming (service + username on Linux, service +
 * account on macOS), so a secret stored by one is found by the other.
 */

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
      reject(
        new KeychainError(
          'timeout',
          `${command} did not answer within ${timeoutMs / 1000} s (is the keyring locked, or D-Bus missing?)`
        )
      )
    }, timeoutMs)
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      reject(
        new KeychainError(
          'unavailable',
          error.code === 'ENOENT' ? `${command} is not installed` : `${command}: ${error.message}`
        )
      )
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.on('error', () => {}) // a tool that exits before reading its stdin answers through its exit code
    child.stdin.end(input ?? undefined)
  })
}

/** `secret-tool store` keeps the first 8191 bytes of a longer secret, says "password is too long" and exits 0. */
const SECRET_TOOL_MAX_BYTES = 8191

/** Linux Secret Service through `secret-tool`, attributes `service` and `username` (as the binding writes them). */
export function secretToolStore(service: string, timeoutMs: number, why: string): SecretStore {
  const attributes = (account: string) => ['service', service, 'username', account]
  return {
    kind: 'keychain',
    description: `Secret Service via secret-tool, service ${service} (${why})`,
    async get(account) {
      const result = await run('secret-tool', ['lookup', ...attributes(account)], null, timeoutMs)
      if (result.code === 0) return result.stdout
      if (result.code === 1 && result.stderr.trim() === '') return undefined
      throw classifyKeychainFailure('secret-tool lookup', result.stderr)
    },
    async set(account, value) {
      if (Buffer.byteLength(value) > SECRET_TOOL_MAX_BYTES) {
        throw new KeychainError(
          'failed',
          `${account} is ${Buffer.byteLength(value)} bytes, more than secret-tool stores whole (${SECRET_TOOL_MAX_BYTES}); the native binding @napi-rs/keyring has no such limit`
        )
      }
      const result = await run(
        'secret-tool',
        ['store', `--label=${service}/${account}`, ...attributes(account)],
        value,
        timeoutMs
      )
      if (result.code !== 0 || result.stderr.trim() !== '')
        throw classifyKeychainFailure('secret-tool store', result.stderr)
    },
    async delete(account) {
      const result = await run('secret-tool', ['clear', ...attributes(account)], null, timeoutMs)
      if (result.code !== 0 && result.stderr.trim() !== '')
        throw classifyKeychainFailure('secret-tool clear', result.stderr)
    }
  }
}

/**
 * Items written by Syncscope before the native binding: `secret-tool` with attributes `service` and `account` (the
 * binding looks for `username`). Read once and moved, so a token stored by an earlier version is still found.
 */
export interface LegacySecretToolItems {
  take(account: string): Promise<string | undefined>
  clear(account: string): Promise<void>
}

export function legacySecretToolItems(service: string, timeoutMs: number): LegacySecretToolItems {
  const attributes = (account: string) => ['service', service, 'account', account]
  let installed = true
  const call = async (args: string[]): Promise<RunResult | null> => {
    if (!installed) return null
    try {
      return await run('secret-tool', args, null, timeoutMs)
    } catch (error) {
      if (error instanceof KeychainError && error.reason === 'unavailable') {
        installed = false // without secret-tool no earlier version could have written anything
        return null
      }
      throw error
    }
  }
  return {
    async take(account) {
      const result = await call(['lookup', ...attributes(account)])
      if (!result || result.code !== 0) return undefined
      return result.stdout
    },
    async clear(account) {
      await call(['clear', ...attributes(account)])
    }
  }
}

/**
 * The password as `security find-generic-password -g` prints it on stderr (print_buffer in Apple's
 * keychain_utilities.c): `password: "<text>"` when every byte is printable ASCII other than `\`, else
 * `password: 0x<HEX>` followed by an escaped rendering, and nothing after `password: ` when it is empty. (`-w` prints
 * such a value as bare hex, which cannot be told from a value made of hex digits.)
 */
export function parseSecurityPassword(stderr: string): string {
  const printed = stderr
    .split('\n')
    .find((line) => line.startsWith('password: '))
    ?.slice('password: '.length)
  if (printed === undefined)
    throw new KeychainError('failed', 'security find-generic-password -g printed no password line')
  const hex = /^0x([0-9A-Fa-f]*)/.exec(printed)
  if (hex) return Buffer.from(hex[1] ?? '', 'hex').toString('utf8')
  if (printed.trim() === '') return ''
  if (printed.length >= 2 && printed.startsWith('"') && printed.endsWith('"')) return printed.slice(1, -1)
  throw new KeychainError(
    'failed',
    'security find-generic-password -g printed a password line it does not usually print'
  )
}

/** The longest line `security -i` reads (MAX_LINE_LEN in Apple's security.c is 4096, with the newline). */
const SECURITY_MAX_LINE = 4095

/** A word for `security -i`'s own line splitter: double-quoted, with `\` escaping `"` and `\`. */
const securityWord = (text: string) => `"${text.replace(/[\\"]/g, (char) => `\\${char}`)}"`

/**
 * macOS `security`. `add-generic-password -w <secret>` would put the secret in argv, and a bare `-w` at the end
 * reads it through getpass(3): from the controlling terminal when there is one (a prompt in the user's shell), and cut
 * to 128 bytes. So the command line itself goes to `security -i` on stdin, with the secret as `-X <hex>`; one line
 * holds at most 4095 characters, which bounds a secret to about 1,950 bytes on this path.
 */
export function macSecurityStore(service: string, timeoutMs: number, why: string): SecretStore {
  return {
    kind: 'keychain',
    description: `macOS Keychain via the security tool, service ${service} (${why})`,
    async get(account) {
      const result = await run(
        'security',
        ['find-generic-password', '-s', service, '-a', account, '-g'],
        null,
        timeoutMs
      )
      if (result.code === 0) return parseSecurityPassword(result.stderr)
      if (result.code === 44 || /could not be found/i.test(result.stderr)) return undefined
      throw classifyKeychainFailure('security find-generic-password', result.stderr)
    },
    async set(account, value) {
      const hex = Buffer.from(value, 'utf8').toString('hex')
      const line = `add-generic-password -U -s ${securityWord(service)} -a ${securityWord(account)} -X ${hex}`
      if (line.length > SECURITY_MAX_LINE) {
        throw new KeychainError(
          'failed',
          `${account} is ${Buffer.byteLength(value)} bytes, more than the security tool can take on stdin (about 1,950); the native binding @napi-rs/keyring has no such limit`
        )
      }
      const result = await run('security', ['-i'], `${line}\n`, timeoutMs)
      if (result.code !== 0 || /returned -?\d+/.test(result.stderr))
        throw classifyKeychainFailure('security add-generic-password', result.stderr)
    },
    async delete(account) {
      const result = await run('security', ['delete-generic-password', '-s', service, '-a', account], null, timeoutMs)
      if (result.code !== 0 && result.code !== 44 && !/could not be found/i.test(result.stderr))
        throw classifyKeychainFailure('security delete-generic-password', result.stderr)
    }
  }
}
