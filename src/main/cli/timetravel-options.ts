import { type ParseArgsConfig, parseArgs } from 'node:util'
import { resolve } from 'node:path'
import { z } from 'zod'
import { defaultDataDir } from '../data-dir'
import { TimeTravelInputError } from '../timetravel/log'
import type { OpenOptions } from '../timetravel/source'
import { pairSchema } from './check'
import type { Output } from './output'

export const LOG_OPTIONS_USAGE = `  --data-dir DIR     the local shape server's data folder: its shape logs are read there, not over HTTP
                     (default: the app's, ${defaultDataDir()})
  --over-http        follow the log over HTTP as a client would, even where the server's files are at hand
  --header 'K: V'    a header on every request to the shape service (repeatable), e.g. 'Authorization: Bearer …'
  --param k=v        a query parameter on every request (repeatable), e.g. secret=…
  --json             print the result as JSON`

/** parseArgs options every command reading shape logs takes. */
export const LOG_OPTIONS = {
  'data-dir': { type: 'string' },
  'over-http': { type: 'boolean' },
  header: { type: 'string', multiple: true },
  param: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' }
} as const

const LogOptionsSchema = z.object({
  'data-dir': z.string().min(1, '--data-dir must not be empty').optional(),
  'over-http': z.boolean().optional(),
  header: z.array(pairSchema('--header', ':')).default([]),
  param: z.array(pairSchema('--param', '=')).default([])
})

/** How the shape logs are to be read, from the command line's options; a string naming what is wrong otherwise. */
export function openOptions(values: Record<string, unknown>): OpenOptions | string {
  const parsed = LogOptionsSchema.safeParse(values)
  if (!parsed.success) return parsed.error.issues.map((issue) => issue.message).join('\n')
  return {
    dataDir: resolve(parsed.data['data-dir'] ?? defaultDataDir()),
    overHttp: parsed.data['over-http'] === true,
    headers: Object.fromEntries(parsed.data.header),
    params: Object.fromEntries(parsed.data.param)
  }
}

/** A postgres:// URL, or the message naming what is wrong with it. */
export const databaseUrlProblem = (url: string): string | null =>
  /^postgres(ql)?:\/\//.test(url) ? null : '--database must be a postgres:// URL'

/** Runs a command: input it cannot use is one line and exit code 2, never a stack trace. */
export async function runCommand(command: string, io: Output, task: () => Promise<number>): Promise<number> {
  try {
    return await task()
  } catch (error) {
    if (!(error instanceof TimeTravelInputError)) throw error
    io.err(`syncscope ${command}: ${error.message}\n`)
    return 2
  }
}

type OptionsConfig = NonNullable<ParseArgsConfig['options']>

type Parsed<T extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; strict: true; allowPositionals: true; options: typeof LOG_OPTIONS & T }>
>

/**
 * A command line of one of these commands parsed with LOG_OPTIONS and `options`, and `usage(message)` (which prints
 * the message and the usage, and answers exit code 2); or the exit code when there is nothing more to do (`--help`,
 * an unknown option).
 */
export function commandLine<T extends OptionsConfig>(
  command: string,
  usageText: string,
  argv: string[],
  options: T,
  io: Output
): { parsed: Parsed<T>; usage: (message: string) => number } | number {
  const text = `usage:\n  ${usageText.split('\n').join('\n  ')}\n`
  const usage = (message: string): number => {
    io.err(`syncscope ${command}: ${message}\n\n${text}`)
    return 2
  }
  let parsed: Parsed<T>
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals: true, options: { ...LOG_OPTIONS, ...options } })
  } catch (error) {
    return usage((error as Error).message)
  }
  if ((parsed.values as { help?: boolean }).help) {
    io.out(text)
    return 0
  }
  return { parsed, usage }
}
