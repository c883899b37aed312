#!/usr/bin/env node
// The one test command: typecheck, lint, build, vitest, Playwright — then a closing `N passed, N failed` line
// counted over every check and test, since CI reads neither vitest's nor Playwright's summary.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'

const totals = { passed: 0, failed: 0, skipped: 0 }
const failures = []
mkdirSync('test-results', { recursive: true })

function run(label, command, args) {
  process.stdout.write(`\n=== ${label}: ${command} ${args.join(' ')}\n`)
  const result = spawnSync(command, args, {
    stdio: 'inherit',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }
  })
  return result.status === 0
}

function check(label, command, args) {
  if (run(label, command, args)) totals.passed += 1
  else {
    totals.failed += 1
    failures.push(label)
  }
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    return null
  }
}

function suite(label, command, args, report, count) {
  rmSync(report, { force: true })
  const ok = run(label, command, args)
  const json = existsSync(report) ? readJson(report) : null
  const counted = json ? count(json) : { passed: 0, failed: 1, skipped: 0 }
  if (!ok && counted.failed === 0) counted.failed = 1
  totals.passed += counted.passed
  totals.failed += counted.failed
  totals.skipped += counted.skipped
  if (counted.failed > 0) failures.push(`${label} (${counted.failed} failed)`)
  process.stdout.write(`--- ${label}: ${counted.passed} passed, ${counted.failed} failed, ${counted.skipped} skipped\n`)
}

const only = process.argv[2]
if (!only || only === 'static') {
  check('typecheck', 'npm', ['run', '--silent', 'typecheck'])
  check('lint', 'npm', ['run', '--silent', 'lint'])
  check('build', 'npm', ['run', '--silent', 'build'])
}
const vitestCounts = (json) => ({
  passed: json.numPassedTests ?? 0,
  failed:
    (json.numFailedTests ?? 0) +
    (json.numRuntimeErrorTestSuites ?? 0) +
    (json.numFailedTestSuites > 0 && json.numFailedTests === 0 ? json.numFailedTestSuites : 0),
  skipped: (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0)
})
if (!only || only === 'unit') suite('vitest', 'npx', ['vitest', 'run'], 'test-results/vitest.json', vitestCounts)
if (!only || only === 'faults') {
  suite(
    'faults',
    'npx',
    ['vitest', 'run', '--config', 'vitest.faults.config.ts'],
    'test-results/vitest-faults.json',
    vitestCounts
  )
}
if (!only || only === 'e2e') {
  suite('playwright', 'npx', ['playwright', 'test'], 'test-results/playwright.json', (json) => ({
    passed: (json.stats?.expected ?? 0) + (json.stats?.flaky ?? 0),
    failed: json.stats?.unexpected ?? 0,
    skipped: json.stats?.skipped ?? 0
  }))
}

if (failures.length) process.stdout.write(`\nFailed: ${failures.join(', ')}\n`)
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`)
process.exit(totals.failed === 0 ? 0 : 1)
