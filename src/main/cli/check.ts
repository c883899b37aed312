import { writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { z } from 'zod'
import { DEFAULT_HEADER_BRAND, HeaderBrandSchema } from '../../shared/protocol'
import type { CheckerOptions } from '../checker/context'
import { formatJunit, formatReport } from '../checker/format'
import { CHECKS, CheckerUsageError, runConformance } from '../checker/run'
import { stdio, type Output } from './output'

export const CHECK_USAGE = `syncscope check <url> [options]      protocol conformance of a shape endpoint (this app, a service, a proxy/CDN)
  --header-brand B   service (default) or electric: the protocol header names expected
  --table T          a table the checker may read (sent as \`table\`); leave it out when the endpoint fixes the shape
  --write-sql URL    the Postgres the service follows: live checks create, change and drop a table of their own there
                     (syncscope_check_<random>; needs --table); without it the checks that need changes are skipped
  --header 'K: V'    a header on every request (repeatable), e.g. 'Authorization: Bearer …'
  --param k=v        a query parameter on every request (repeatable), e.g. secret=…, source_id=…
  --only IDS         comma-separated checks: ${CHECKS.map((check) => check.id).join(', ')}
  --max-wait S       longest wait for a server timer (long-poll, keep-alive, SSE lifetime); default 65
  --json             print the report as JSON
  --junit FILE       also write the report as JUnit XML
  exit code 0 when no check failed (warnings allowed), 1 when one failed or could not finish, 2 on a usage error`

const pairSchema = (flag: string, separator: string) =>
  z
    .string()
    .refine((text) => text.indexOf(separator) > 0, `${flag} must look like name${separator}value`)
    .transform((text): [string, string] => [
      text.slice(0, text.indexOf(separator)).trim(),
      text.slice(text.indexOf(separator) + 1).trim()
    ])

export const CheckOptionsSchema = z.object({
  url: z
    .string({ error: 'the shape endpoint URL is missing' })
    .url('the endpoint must be an http(s) URL')
    .refine((url) => /^https?:$/.test(new URL(url).protocol), 'the endpoint must be an http(s) URL'),
  headerBrand: z
    .enum(HeaderBrandSchema.options, {
      error: `--header-brand must be ${HeaderBrandSchema.options.map((brand) => `\`${brand}\``).join(' or ')}`
    })
    .default(DEFAULT_HEADER_BRAND),
  table: z.string().min(1, '--table must not be empty').nullable().default(null),
  writeSql: z
    .string()
    .regex(/^postgres(ql)?:\/\//, '--write-sql must be a postgres:// URL')
    .nullable()
    .default(null),
  headers: z
    .array(pairSchema('--header', ':'))
    .default([])
    .transform((pairs) => Object.fromEntries(pairs)),
  params: z
    .array(pairSchema('--param', '='))
    .default([])
    .transform((pairs) => Object.fromEntries(pairs)),
  only: z
    .string()
    .default('')
    .transform((text) =>
      text
        .split(',')
        .map((id) => id.trim())
        .filter(Boolean)
    ),
  maxWaitSeconds: z.coerce
    .number({ error: '--max-wait must be a number of seconds' })
    .int('--max-wait must be whole seconds')
    .min(1, '--max-wait must be at least 1')
    .max(600, '--max-wait must be at most 600')
    .default(65),
  json: z.boolean().default(false),
  junit: z.string().min(1).nullable().default(null)
})

export type CheckCliOptions = z.infer<typeof CheckOptionsSchema>

/** Parses `check` arguments; throws CheckerUsageError naming the bad option. */
export function parseCheckOptions(argv: string[]): CheckCliOptions {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    throw new CheckerUsageError((error as Error).message)
  }
  const { values, positionals } = parsed
  if (positionals.length > 1) throw new CheckerUsageError(`one endpoint URL, not ${positionals.length}`)
  const result = CheckOptionsSchema.safeParse({
    url: positionals[0],
    headerBrand: values['header-brand'],
    table: values.table ?? null,
    writeSql: values['write-sql'] ?? null,
    headers: values.header,
    params: values.param,
    only: values.only,
    maxWaitSeconds: values['max-wait'],
    json: values.json,
    junit: values.junit ?? null
  })
  if (!result.success) throw new CheckerUsageError(result.error.issues.map((issue) => issue.message).join('\n'))
  return result.data
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: {
      'header-brand': { type: 'string' },
      table: { type: 'string' },
      'write-sql': { type: 'string' },
      header: { type: 'string', multiple: true },
      param: { type: 'string', multiple: true },
      only: { type: 'string' },
      'max-wait': { type: 'string' },
      json: { type: 'boolean' },
      junit: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
}

/** `syncscope check <url>`: runs the battery, prints the report, exits 1 when a check failed. */
export async function checkMain(argv: string[], io: Output = stdio): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(`usage:\n  ${CHECK_USAGE}\n`)
    return 0
  }
  let options: CheckCliOptions
  try {
    options = parseCheckOptions(argv)
  } catch (error) {
    io.err(`syncscope check: ${(error as Error).message}\n\nusage:\n  ${CHECK_USAGE}\n`)
    return 2
  }
  const checkerOptions: CheckerOptions = { ...options }
  try {
    const report = await runConformance(
      checkerOptions,
      options.json ? undefined : (result) => io.err(`${result.status.toUpperCase().padEnd(4)}  ${result.id}\n`)
    )
    io.out(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report))
    if (options.junit) await writeFile(resolve(options.junit), formatJunit(report))
    return report.summary.fail + report.summary.error > 0 ? 1 : 0
  } catch (error) {
    if (error instanceof CheckerUsageError) {
      io.err(`syncscope check: ${error.message}\n`)
      return 2
    }
    throw error
  }
}
