/** Where a CLI command writes (stdout and stderr, or a test's buffers). */
export interface Output {
  out: (text: string) => void
  err: (text: string) => void
}

/** The process's own stdout and stderr. */
export const stdio: Output = { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) }

/** Wrong arguments: `syncscope mcp` prints the message and its usage, and exits 2. */
export class UsageError extends Error {}

/** Resolves once everything written to `stream` so far is with the OS (or the reader went away: EPIPE). */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || !stream.writable) return Promise.resolve()
  return new Promise((resolve) => {
    stream.once('error', () => resolve())
    // writes complete in order: the callback of an empty write comes after every write before it
    stream.write('', () => resolve())
  })
}

/**
 * Ends the process with `code` once stdout and stderr are drained. A pipe takes 64 KiB at once and Node queues the
 * rest, which `process.exit` throws away: `syncscope doctor --json | jq` got 64 KiB of a 2 MB report.
 */
export async function exitWhenDrained(code: number): Promise<never> {
  process.exitCode = code
  await Promise.all([drained(process.stdout), drained(process.stderr)])
  process.exit(code)
}
