import type { CheckResult, ConformanceReport } from '../../shared/contract/checker'
import { maskUrl } from '../../shared/shape-client/recorder'
import type { Check } from './checks/check'
import { cachingChecks } from './checks/caching'
import { longPollCheck, mustRefetchCheck } from './checks/live'
import { sseCheck, sseLifetimeCheck } from './checks/sse'
import { syncChecks } from './checks/sync'
import { CheckContext, type CheckerOptions, Outcome } from './context'
import { ProbeFailure } from './probe'
import { WriteTable } from './write-table'

/** Every check, in report order. */
export const CHECKS: readonly Check[] = [
  ...syncChecks,
  ...cachingChecks,
  longPollCheck,
  sseCheck,
  sseLifetimeCheck,
  mustRefetchCheck
]

export class CheckerUsageError extends Error {}

/** The checks `--only` selects (ids, comma-separated in the CLI); an unknown id is a usage error. */
export function selectChecks(only: readonly string[]): Check[] {
  const unknown = only.filter((id) => !CHECKS.some((check) => check.id === id))
  if (unknown.length > 0)
    throw new CheckerUsageError(
      `unknown check ${unknown.join(', ')}; the checks are ${CHECKS.map((check) => check.id).join(', ')}`
    )
  return only.length === 0 ? [...CHECKS] : CHECKS.filter((check) => only.includes(check.id))
}

function skipReason(check: Check, options: CheckerOptions): string | null {
  if (check.needs?.includes('writes') && !options.writeSql)
    return 'needs --write-sql (a Postgres where the checker may create its own table)'
  if (check.needs?.includes('table') && !options.table) return 'needs --table (an endpoint that takes a table)'
  return null
}

function statusOf(outcome: Outcome): CheckResult['status'] {
  if (outcome.failed) return 'error'
  if (outcome.findings.some((finding) => finding.severity === 'error')) return 'fail'
  if (outcome.findings.length > 0) return 'warn'
  return outcome.skipped ? 'skip' : 'pass'
}

const describeError = (error: unknown): string =>
  error instanceof Error ? error.message.split('\n')[0] || error.name : String(error)

async function runOne(check: Check, ctx: CheckContext): Promise<CheckResult> {
  const started = performance.now()
  const outcome = new Outcome(ctx.brand)
  const reason = skipReason(check, ctx.options)
  if (reason) outcome.skip(reason)
  else {
    try {
      await check.run(ctx, outcome)
    } catch (error) {
      if (error instanceof ProbeFailure) outcome.addFailure(error)
      // e.g. the --write-sql database went away: no verdict on the endpoint, and no pass either
      else outcome.fail(`the check could not finish: ${describeError(error)}`)
    }
  }
  const status = statusOf(outcome)
  const reasonText =
    status === 'skip' ? outcome.skipped : status === 'error' ? outcome.failed : outcome.notes.join('; ') || null
  return {
    id: check.id,
    title: check.title,
    status,
    reason: reasonText,
    findings: outcome.findings,
    ms: Math.round(performance.now() - started)
  }
}

/**
 * Runs the battery against one endpoint. The checks run side by side (the slow ones wait on server timers), each
 * reported through `onResult` as it finishes; the checker's own table (with --write-sql) is dropped at the end.
 */
export async function runConformance(
  options: CheckerOptions,
  onResult: (result: CheckResult) => void = () => {}
): Promise<ConformanceReport> {
  const checks = selectChecks(options.only)
  const startedAt = new Date()
  const started = performance.now()
  if (options.writeSql && !options.table)
    throw new CheckerUsageError(
      "--write-sql needs --table: the live checks read the checker's own table through the `table` parameter"
    )
  const writeTable = options.writeSql ? await WriteTable.create(options.writeSql) : null
  const ctx = new CheckContext(options, writeTable)
  let results: CheckResult[]
  try {
    results = await Promise.all(
      checks.map(async (check) => {
        const result = await runOne(check, ctx)
        onResult(result)
        return result
      })
    )
  } finally {
    await writeTable?.drop()
  }
  const count = (status: CheckResult['status']) => results.filter((result) => result.status === status).length
  return {
    url: maskUrl(ctx.url({})),
    headerBrand: options.headerBrand,
    table: options.table,
    writeTable: writeTable?.name ?? null,
    startedAt: startedAt.toISOString(),
    ms: Math.round(performance.now() - started),
    checks: results,
    summary: {
      pass: count('pass'),
      fail: count('fail'),
      warn: count('warn'),
      skip: count('skip'),
      error: count('error')
    }
  }
}
