/** Where a CLI command writes (stdout and stderr, or a test's buffers). */
export interface Output {
  out: (text: string) => void
  err: (text: string) => void
}

/** Wrong arguments: `syncscope mcp` prints the message and its usage, and exits 2. */
export class UsageError extends Error {}
