import { readFile } from 'node:fs/promises'

/** True while a process with this pid exists (and is not a zombie). */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    return !/^State:\s+Z/m.test(status)
  } catch {
    return false
  }
}

/** Polls until the check passes or the time is up (then throws with the description). */
export async function waitFor<T>(
  description: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${description}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export const textOf = (result: { content?: unknown }): string =>
  ((result.content as Array<{ type: string; text?: string }> | undefined) ?? []).map((part) => part.text ?? '').join('')
