import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Reporter, SerializedError, TestCase, TestModule, TestRunEndReason, TestSuite } from 'vitest/node'

/**
 * What scripts/test.mjs counts, written to `outputFile`: every test passed, failed or skipped, where a test that never
 * ran because a hook of its group or file failed counts as failed (vitest's own summary calls it skipped), a file that
 * failed to load counts as one failure, and so does each unhandled error or an interrupted run. Skips are grouped by
 * reason (the " — skipped: …" of facility-tests.ts titles).
 */
export interface RunCounts {
  passed: number
  failed: number
  skipped: number
  /** One line per failure: where, and the first line of its error. */
  failures: string[]
  /** Skipped tests by reason. */
  skips: Record<string, number>
}

const SKIPPED_MARK = ' — skipped: '

const firstLine = (error: { message?: string } | undefined): string =>
  (error?.message ?? 'no error message').split('\n')[0] ?? ''

/** The suites and the file around a test, innermost first. */
function ancestors(test: TestCase): Array<TestSuite | TestModule> {
  const chain: Array<TestSuite | TestModule> = []
  for (let parent: TestSuite | TestModule = test.parent; ; parent = parent.parent) {
    chain.push(parent)
    if (parent.type === 'module') return chain
  }
}

/** Skipped on purpose: it.skip / describe.skip / todo (facility-tests.ts skips this way), or ctx.skip(). */
function skippedOnPurpose(test: TestCase): boolean {
  if (test.options.mode === 'skip' || test.options.mode === 'todo') return true
  if (ancestors(test).some((parent) => parent.type === 'suite' && parent.options.mode === 'skip')) return true
  const result = test.result()
  return result.state === 'skipped' && result.note !== undefined
}

function skipReason(test: TestCase): string {
  for (const name of [test.name, ...ancestors(test).map((parent) => (parent.type === 'suite' ? parent.name : ''))]) {
    const at = name.indexOf(SKIPPED_MARK)
    if (at >= 0) return name.slice(at + SKIPPED_MARK.length)
  }
  const result = test.result()
  return (result.state === 'skipped' && result.note) || 'it.skip without a reason'
}

/** The innermost failed suite or file around `test`, whose error (a hook's, or the file's load) kept it from running. */
function blockedBy(test: TestCase): TestSuite | TestModule | undefined {
  return ancestors(test).find((parent) => parent.errors().length > 0)
}

const nameOf = (holder: TestSuite | TestModule): string =>
  holder.type === 'module' ? holder.relativeModuleId : `${holder.module.relativeModuleId} > ${holder.fullName}`

export function countRun(
  modules: ReadonlyArray<TestModule>,
  unhandled: ReadonlyArray<SerializedError>,
  reason: TestRunEndReason
): RunCounts {
  const counts: RunCounts = { passed: 0, failed: 0, skipped: 0, failures: [], skips: {} }
  const fail = (line: string) => {
    counts.failed += 1
    counts.failures.push(line)
  }
  /** Failed suites and files whose error some test was counted failed by. */
  const counted = new Set<TestSuite | TestModule>()
  for (const module of modules) {
    for (const test of module.children.allTests()) {
      const result = test.result()
      const where = `${module.relativeModuleId} > ${test.fullName}`
      if (result.state === 'passed') counts.passed += 1
      else if (result.state === 'failed') fail(`${where}: ${firstLine(result.errors[0])}`)
      else if (result.state === 'pending') fail(`${where}: did not finish (the run ended first)`)
      else if (skippedOnPurpose(test)) {
        counts.skipped += 1
        const why = skipReason(test)
        counts.skips[why] = (counts.skips[why] ?? 0) + 1
      } else {
        const holder = blockedBy(test)
        if (holder) counted.add(holder)
        fail(`${where}: did not run: ${holder ? firstLine(holder.errors()[0]) : 'a hook or the file failed before it'}`)
      }
    }
    // a file that did not load, or an afterAll that failed after its tests passed: one failure each
    for (const holder of [module, ...module.children.allSuites()])
      if (holder.errors().length > 0 && !counted.has(holder))
        fail(`${nameOf(holder)}: ${firstLine(holder.errors()[0])}`)
  }
  for (const error of unhandled) fail(`unhandled error: ${firstLine(error)}`)
  if (reason === 'interrupted') fail('the run was interrupted')
  return counts
}

export default class CountingReporter implements Reporter {
  constructor(private readonly options: { outputFile: string }) {}

  onTestRunEnd(
    modules: ReadonlyArray<TestModule>,
    unhandled: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason
  ): void {
    mkdirSync(dirname(this.options.outputFile), { recursive: true })
    writeFileSync(this.options.outputFile, `${JSON.stringify(countRun(modules, unhandled, reason), null, 2)}\n`)
  }
}
