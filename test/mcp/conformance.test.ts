import { execFileSync, spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// The official MCP conformance suite's client scenarios, run as SDK maintainers run them (`conformance client
// --command … --scenario …`), with Syncscope's CLI as the client under test (conformance/client.ts). Version 0.1.16
// imports fs.globSync, which Node 20 lacks: conformance/node20.mjs gives it one (used only by `tier-check`).
const ROOT = resolve(__dirname, '../..')
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance')
const VERSION = (JSON.parse(readFileSync(join(SUITE, 'package.json'), 'utf8')) as { version: string }).version
const CONFORMANCE = ['--import', join(__dirname, 'conformance/node20.mjs'), join(SUITE, 'dist/index.js')]
const CLIENT = `exec ${process.execPath} --import tsx ${join(__dirname, 'conformance/client.ts')}`
/**
 * Scenarios whose failure is expected, each with its reason: the `client:` list of expected-failures.yml (the suite's
 * own baseline format, for `--expected-failures`). A listed scenario that passes fails here, as it does there.
 */
const EXPECTED_FAILURES = new Set(
  readFileSync(join(__dirname, 'conformance/expected-failures.yml'), 'utf8')
    .split('client:')[1]
    ?.split('\n')
    .flatMap((line) => /^\s+-\s+(\S+)/.exec(line)?.[1] ?? []) ?? []
)
/** The suite times each client out after this (its default); the test waits a little longer for the suite itself. */
const CLIENT_TIMEOUT_MS = 30_000

interface Check {
  id: string
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
  description?: string
  errorMessage?: string
}

/** Every client scenario of the pinned suite with the spec versions it belongs to, as `conformance list` prints them. */
function clientScenarios(): Array<{ name: string; versions: string[] }> {
  const listed = execFileSync(process.execPath, [...CONFORMANCE, 'list'], { encoding: 'utf8' })
  const section = listed.slice(listed.indexOf('Client scenarios'))
  return [...section.matchAll(/^\s+- (\S+) \[([^\]]*)\]$/gm)].map((match) => ({
    name: match[1]!,
    versions: match[2]!.split(',')
  }))
}

const scenarios = clientScenarios()
/** Measured against a retry interval, so it runs alone (see the second describe). */
const TIMED = new Set(['sse-retry'])

let output: string

/** One scenario through the suite's runner: its exit code (0: every check passed, the client ended well) and checks. */
function runScenario(name: string): Promise<{ code: number | null; log: string; checks: Check[] }> {
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      [
        ...CONFORMANCE,
        'client',
        '--command',
        CLIENT,
        '--scenario',
        name,
        '-o',
        output,
        '--timeout',
        String(CLIENT_TIMEOUT_MS)
      ],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] }
    )
    let log = ''
    child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()))
    child.once('close', (code) => done({ code, log, checks: checksOf(name) }))
  })
}

/** The checks.json the runner saved for the scenario (under `<output>/<scenario>-<time>/`). */
function checksOf(name: string): Check[] {
  const base = join(output, ...name.split('/').slice(0, -1))
  const leaf = name.split('/').at(-1)!
  const found = readdirSync(base).find((entry) => entry.startsWith(`${leaf}-`))
  return found ? (JSON.parse(readFileSync(join(base, found, 'checks.json'), 'utf8')) as Check[]) : []
}

async function expectScenario(name: string): Promise<void> {
  const { code, log, checks } = await runScenario(name)
  const failed = checks.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING')
  const report = `${name}: exit ${code}; ${failed.map((check) => `${check.status} ${check.id}: ${check.errorMessage ?? check.description}`).join('; ')}\n${log}`
  expect(checks.length, report).toBeGreaterThan(0)
  if (EXPECTED_FAILURES.has(name)) {
    expect(code, `${name} is listed in expected-failures.yml but passes: remove it`).not.toBe(0)
    return
  }
  expect(code, report).toBe(0)
}

describe(`the MCP conformance suite ${VERSION}: every client scenario against syncscope mcp`, () => {
  beforeAll(async () => {
    output = await mkdtemp(join(tmpdir(), 'syncscope-conformance-results-'))
  })
  afterAll(async () => {
    await rm(output, { recursive: true, force: true })
  })

  it('covers both spec versions of the suite, and expects no failure of a scenario it does not have', () => {
    const versions = new Set(scenarios.flatMap((scenario) => scenario.versions))
    expect(versions).toContain('2025-06-18')
    expect(versions).toContain('2025-11-25')
    for (const name of EXPECTED_FAILURES) expect(scenarios.map((scenario) => scenario.name)).toContain(name)
  })

  describe.concurrent('scenarios', () => {
    for (const { name, versions } of scenarios.filter((scenario) => !TIMED.has(scenario.name)))
      it(`${name} [${versions.join(', ')}]`, () => expectScenario(name), CLIENT_TIMEOUT_MS * 2)
  })

  describe('scenarios measured in time (alone)', () => {
    for (const { name, versions } of scenarios.filter((scenario) => TIMED.has(scenario.name)))
      it(`${name} [${versions.join(', ')}]`, () => expectScenario(name), CLIENT_TIMEOUT_MS * 2)
  })
})
