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

/** Sorts a keychain's complaint (from the binding or a CLI tool's stderr) into a reason. */
export function classifyKeychainFailure(source: string, text: string): KeychainError {
  const message = text.trim() || 'no message'
  if (/locked|prompt|dismissed|collection\/login/i.test(message))
    return new KeychainError('locked', `the keyring is locked (${source}: ${message})`)
  if (/D-?Bus|autolaunch|org\.freedesktop\.secrets|ServiceUnknown|connect to socket/i.test(message)) {
    return new KeychainError('unavailable', `no Secret Service on the session bus (${source}: ${message})`)
  }
  return new KeychainError('failed', `${source} failed: ${message}`)
}

/** D-Bus activation may wait 25 s for a keyring that never answers; a keychain call gives up well before. */
export const KEYCHAIN_TIMEOUT_MS = 8_000

export function withKeychainTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new KeychainError(
            'timeout',
            `${what} did not answer within ${timeoutMs / 1000} s (is the keyring locked, or D-Bus missing?)`
          )
        ),
      timeoutMs
    )
  })
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer))
}
