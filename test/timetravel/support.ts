import type { Output } from '../../src/main/cli/output'
import { Shape } from '../../src/shared/shape-client'
import type { Row } from '../../src/shared/shape-client/messages'
import { waitFor } from '../shape-client/support'

export interface CliResult {
  code: number
  out: string
  err: string
}

/** Runs a CLI command's main function in-process, its output captured. */
export async function runMain(
  main: (argv: string[], io: Output) => Promise<number>,
  args: string[]
): Promise<CliResult> {
  let out = ''
  let err = ''
  const code = await main(args, { out: (text) => (out += text), err: (text) => (err += text) })
  return { code, out, err }
}

/** The JSON a `--json` run printed (failing with its stderr when it did not exit as expected). */
export function jsonOf<T>(result: CliResult, code = 0): T {
  if (result.code !== code) throw new Error(`exit code ${result.code}, not ${code}: ${result.err}${result.out}`)
  return JSON.parse(result.out) as T
}

/** Bad input: one line on stderr (no stack trace), exit code 2. */
export function expectOneLine(result: CliResult, pattern: RegExp): void {
  if (result.code !== 2) throw new Error(`exit code ${result.code}, not 2: ${result.err}${result.out}`)
  const lines = result.err.trim().split('\n')
  if (lines.length !== 1) throw new Error(`more than one line: ${result.err}`)
  if (!pattern.test(lines[0] as string)) throw new Error(`${lines[0]} does not match ${pattern}`)
  if (/\bat .*:\d+:\d+/.test(result.err)) throw new Error(`a stack trace: ${result.err}`)
}

/**
 * A client of the shared shape client following a shape live, remembering its rows after every batch by the offset
 * the batch left it at: what a client held at each point of the log.
 */
export class FollowingClient {
  readonly shape: Shape
  readonly held = new Map<string, Map<string, Row>>()

  constructor(url: string, params: Record<string, string>) {
    this.shape = new Shape({ url, params, live: 'long-poll' })
    this.shape.subscribe(() => this.held.set(this.shape.stream.current.offset, new Map(this.shape.rows)))
  }

  async start(): Promise<void> {
    void this.shape.start()
    await waitFor(() => this.shape.stream.current.upToDate, 'the initial sync')
  }

  /** Waits until the client's rows satisfy `check` (a change replicated and delivered). */
  async until(check: (rows: ReadonlyMap<string, Row>) => boolean, what: string): Promise<void> {
    await waitFor(() => check(this.shape.rows), what, 30_000)
  }

  stop(): void {
    this.shape.stop()
  }
}

export const rowsByKey = (rows: Array<{ key: string; value: Row }>): Map<string, Row> =>
  new Map(rows.map((row) => [row.key, row.value]))
