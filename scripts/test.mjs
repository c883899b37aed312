#!/usr/bin/env node
// The one test command: typecheck, lint, build, vitest, Playwright — then a closing `N passed, N failed, N skipped`
// line counted over every check and test, since CI reads neither vitest's nor Playwright's summary. A test that a
// failed hook kept from running counts as failed; each step has a time limit, past which its whole process tree is
// killed and the step counts as failed. `node scripts/test.mjs [static|unit|faults|e2e] [files or options…]` runs one
// part, passing the rest to its runner.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { stripVTControlCharacters } from 'node:util'

const MINUTE = 60_000
/**
 * Minutes per step: well over what each takes on a 2-core machine (vitest 6.2 min quiet, 7.2 beside a Chromium bench;
 * faults 0.6–0.9; Playwright 1.8–2.5), so only a hang reaches them; Playwright's own globalTimeout ends it a minute
 * sooner.
 */
const LIMITS = { typecheck: 4, lint: 4, build: 4, vitest: 15, faults: 8, playwright: 10 }
/** How long a step's processes get to leave after SIGTERM before SIGKILL. */
const GRACE_MS = 10_000

const totals = { passed: 0, failed: 0, skipped: 0 }
/** Ctrl+C or a SIGTERM: passed on to the running step, and no step after it. */
let interrupted = false
const failures = []
const failedTests = []
const skips = new Map()
mkdirSync('test-results', { recursive: true })

/** The pids of every process below `root`, by parent pid in /proc (Postgres runs in process groups of its own). */
function descendants(root) {
  if (!existsSync('/proc')) return []
  const children = new Map()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)])
    } catch {
      // it exited meanwhile
    }
  }
  const found = []
  for (let queue = [root]; queue.length;) {
    const pid = queue.shift()
    for (const child of children.get(pid) ?? []) {
      found.push(child)
      queue.push(child)
    }
  }
  return found
}

function signalTree(pid, signal) {
  for (const target of [pid, ...descendants(pid)]) {
    try {
      process.kill(target, signal)
    } catch {
      // gone already
    }
  }
}

/**
 * Runs a step with its output on ours (`buffered`: held and written whole when it ends, for steps run side by side);
 * past `limitMinutes` its whole tree is killed.
 */
function run(label, command, args, limitMinutes, { buffered = false } = {}) {
  const header = `\n=== ${label}: ${command} ${args.join(' ')} (time limit ${limitMinutes} min)\n`
  if (!buffered) process.stdout.write(header)
  return new Promise((resolve) => {
    const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }
    const child = spawn(command, args, { stdio: buffered ? ['ignore', 'pipe', 'pipe'] : 'inherit', env })
    const held = []
    child.stdout?.on('data', (chunk) => held.push(chunk))
    child.stderr?.on('data', (chunk) => held.push(chunk))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      process.stdout.write(
        `\n${label}: still running after ${limitMinutes} min — killing it and everything it started\n`
      )
      const tree = [child.pid, ...descendants(child.pid)]
      signalTree(child.pid, 'SIGTERM')
      setTimeout(() => tree.forEach((pid) => signalTree(pid, 'SIGKILL')), GRACE_MS).unref()
    }, limitMinutes * MINUTE)
    const stop = (signal) => {
      interrupted = true
      signalTree(child.pid, signal)
    }
    process.on('SIGINT', stop).on('SIGTERM', stop)
    child.on('error', (error) => process.stdout.write(`${label}: ${error.message}\n`))
    child.on('close', (status) => {
      clearTimeout(timer)
      process.off('SIGINT', stop).off('SIGTERM', stop)
      if (buffered) process.stdout.write(Buffer.concat([Buffer.from(header), ...held]))
      if (interrupted) process.exit(130)
      resolve({ ok: status === 0 && !timedOut, timedOut })
    })
  })
}

async function check(label, command, args, options) {
  const { ok, timedOut } = await run(label, command, args, LIMITS[label], options)
  if (ok) totals.passed += 1
  else {
    totals.failed += 1
    failures.push(timedOut ? `${label} (timed out)` : label)
  }
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    return null
  }
}

/** A test step: its counts from `report` (written by the runner), one failure more when it failed otherwise. */
async function suite(label, command, args, report, count) {
  rmSync(report, { force: true })
  const { ok, timedOut } = await run(label, command, args, LIMITS[label])
  const json = existsSync(report) ? readJson(report) : null
  const counted = json ? count(json) : { passed: 0, failed: 0, skipped: 0, failures: [], skips: {} }
  const failAlso = (line) => {
    counted.failed += 1
    counted.failures.push(line)
  }
  if (timedOut) failAlso(`${label}: killed after its time limit of ${LIMITS[label]} min`)
  else if (!json) failAlso(`${label}: exited without its report (${report})`)
  else if (!ok && counted.failed === 0) failAlso(`${label}: exited with an error (see its output above)`)
  totals.passed += counted.passed
  totals.failed += counted.failed
  totals.skipped += counted.skipped
  failedTests.push(...counted.failures)
  for (const [reason, n] of Object.entries(counted.skips)) skips.set(reason, (skips.get(reason) ?? 0) + n)
  if (counted.failed > 0) failures.push(`${label} (${counted.failed} failed)`)
  process.stdout.write(`--- ${label}: ${counted.passed} passed, ${counted.failed} failed, ${counted.skipped} skipped\n`)
}

/** Playwright's JSON report counted like vitest's: a test that did not run (a hook failed, time ran out) failed. */
function playwrightCounts(json) {
  const counted = { passed: 0, failed: 0, skipped: 0, failures: [], skips: {} }
  const fail = (line) => {
    counted.failed += 1
    counted.failures.push(line)
  }
  const firstLine = (message) => stripVTControlCharacters(message ?? '').split('\n')[0]
  /** The first error in each file: a test after it did not run because of it (a failed beforeAll, most often). */
  const fileErrors = new Map()
  const walk = (suite, path) => {
    for (const spec of suite.specs ?? []) {
      for (const test of spec.tests) {
        const where = `${spec.file} > ${[...path, spec.title].join(' > ')}`
        const error = test.results.map((result) => result.error?.message).find(Boolean)
        if (test.status === 'expected' || test.status === 'flaky') counted.passed += 1
        else if (test.status === 'unexpected') {
          fail(`${where}: ${firstLine(error) || 'failed'}`)
          if (error && !fileErrors.has(spec.file)) fileErrors.set(spec.file, firstLine(error))
        } else if (test.expectedStatus === 'skipped') {
          counted.skipped += 1
          const reason =
            test.annotations.find((note) => note.type === 'skip')?.description ?? 'test.skip without a reason'
          counted.skips[reason] = (counted.skips[reason] ?? 0) + 1
        } else fail(`${where}: did not run: ${fileErrors.get(spec.file) ?? 'a hook failed before it, or time ran out'}`)
      }
    }
    for (const child of suite.suites ?? []) walk(child, [...path, child.title])
  }
  for (const top of json.suites ?? []) walk(top, [])
  for (const error of json.errors ?? []) fail(`playwright: ${firstLine(error.message)}`)
  return counted
}

const [only, ...passed] = process.argv.slice(2)
if (!only || only === 'static') {
  // side by side: each keeps about one core busy
  await Promise.all([
    check('typecheck', 'npm', ['run', '--silent', 'typecheck'], { buffered: true }),
    check('lint', 'npm', ['run', '--silent', 'lint'], { buffered: true })
  ])
  await check('build', 'npm', ['run', '--silent', 'build'])
}
// test/support/counting-reporter.ts writes these
const vitestCounts = (json) => json
if (!only || only === 'unit')
  await suite('vitest', 'npx', ['vitest', 'run', ...passed], 'test-results/vitest-counts.json', vitestCounts)
if (!only || only === 'faults') {
  await suite(
    'faults',
    'npx',
    ['vitest', 'run', '--config', 'vitest.faults.config.mts', ...passed],
    'test-results/vitest-faults-counts.json',
    vitestCounts
  )
}
if (!only || only === 'e2e')
  await suite('playwright', 'npx', ['playwright', 'test', ...passed], 'test-results/playwright.json', playwrightCounts)

/** One line per failed test, except that the tests a missing declared facility failed make one line together. */
function failureLines() {
  const lines = []
  const byFacility = new Map()
  for (const line of failedTests) {
    const facility = /^.*?: (?:did not run: )?(missing facility .*)$/.exec(line)?.[1]
    if (facility) byFacility.set(facility, (byFacility.get(facility) ?? 0) + 1)
    else lines.push(line)
  }
  return [...[...byFacility].map(([reason, n]) => `${n} test${n === 1 ? '' : 's'}: ${reason}`), ...lines]
}

if (skips.size) {
  process.stdout.write('\nSkipped:\n')
  for (const [reason, n] of skips) process.stdout.write(`  ${n} × ${reason}\n`)
}
const failed = failureLines()
if (failed.length) {
  process.stdout.write('\nFailed tests:\n')
  for (const line of failed.slice(0, 60)) process.stdout.write(`  ${line}\n`)
  if (failed.length > 60) process.stdout.write(`  … and ${failed.length - 60} more\n`)
}
if (failures.length) process.stdout.write(`\nFailed: ${failures.join(', ')}\n`)
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`)
process.exit(totals.failed === 0 ? 0 : 1)
