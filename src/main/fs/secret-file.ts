import { readFileSync, statSync } from 'node:fs'

/**
 * A secret kept in a file (so it never shows in argv): one line, trailing newline dropped. A file other users may read
 * is refused, not just warned about: the secret would already be out, and a warning scrolls away.
 */
export function readSecretFile(path: string, what: string): string {
  let mode: number
  let text: string
  try {
    mode = statSync(path).mode
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new Error(
      `${what} ${path} cannot be read (${code ?? (error as Error).message}): give a file holding the secret`,
      { cause: error }
    )
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    throw new Error(
      `${what} ${path} can be read by other users (mode ${(mode & 0o777).toString(8).padStart(4, '0')}): run chmod 600 ${path}`
    )
  }
  const secret = text.replace(/\r?\n$/, '')
  if (secret === '' || /[\r\n]/.test(secret)) throw new Error(`${what} ${path} must hold the secret on one line`)
  return secret
}
