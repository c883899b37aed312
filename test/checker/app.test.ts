import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkMain } from '../../src/main/cli/check'
import { findFreePort } from '../../src/main/net/free-port'
import type { CheckerOptions } from '../../src/main/checker/context'
import { CHECKS, runConformance } from '../../src/main/checker/run'
import { ConformanceReportSchema, type ConformanceReport } from '../../src/shared/contract/checker'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const failures = (report: ConformanceReport) =>
  report.checks.flatMap((check) => check.findings.map((finding) => `${check.id}: ${finding.id} ${finding.message}`))
const statuses = (report: ConformanceReport) =>
  Object.fromEntries(report.checks.map((check) => [check.id, check.status]))

function options(
  server: TestShapeServer,
  brand: 'service' | 'electric',
  extra: Partial<CheckerOptions> = {}
): CheckerOptions {
  return {
    url: `${server.url}/v1/shape`,
    headerBrand: brand,
    table: 'issues',
    writeSql: server.databaseUrl,
    headers: {},
    params: {},
    only: [],
    maxWaitSeconds: 10,
    ...extra
  }
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = ''
  let err = ''
  const code = await checkMain(argv, { out: (text) => (out += text), err: (text) => (err += text) })
  return { code, out, err }
}

async function tablesLike(server: TestShapeServer, pattern: string): Promise<string[]> {
  const { rows } = await server.pool.query<{ tablename: string }>(
    'SELECT tablename FROM pg_tables WHERE tablename LIKE $1',
    [pattern]
  )
  return rows.map((row) => row.tablename)
}

describe('syncscope check against this app', () => {
  let service: TestShapeServer
  let electric: TestShapeServer

  beforeAll(async () => {
    ;[service, electric] = await Promise.all([
      // a short SSE lifetime: the sse-lifetime check waits for the stream's end
      startTestShapeServer({ headerBrand: 'service', longPollTimeout: 2_000, sseKeepAlive: 1_000, sseLifetime: 4_000 }),
      // small chunks: the initial sync follows the snapshot over several responses
      startTestShapeServer({
        headerBrand: 'electric',
        longPollTimeout: 2_000,
        sseKeepAlive: 1_000,
        chunkBytes: 100_000
      })
    ])
  })
  afterAll(async () => {
    await Promise.all([service?.close(), electric?.close()])
  })

  it('passes every check under both header brands, the SSE stream lifetime included, and drops its own table', async () => {
    const [serviceReport, electricReport] = await Promise.all([
      runConformance(options(service, 'service', { maxWaitSeconds: 15 })),
      runConformance(options(electric, 'electric'))
    ])
    expect(failures(serviceReport)).toEqual([])
    expect(serviceReport.summary).toEqual({ pass: CHECKS.length, fail: 0, warn: 0, skip: 0, error: 0 })
    expect(serviceReport.checks.find((check) => check.id === 'sse-lifetime')?.reason).toMatch(
      /^ended after [45]\.\d s \(max-age 5 s\)$/
    )
    expect(failures(electricReport)).toEqual([])
    expect(electricReport.checks[0]?.reason).toMatch(/^(\d+) requests, 3002 messages, up to date at /)
    expect(Number(/^(\d+) requests/.exec(electricReport.checks[0]?.reason ?? '')?.[1])).toBeGreaterThan(5)
    expect(statuses(electricReport)).toEqual({
      ...Object.fromEntries(CHECKS.map((check) => [check.id, 'pass'])),
      'sse-lifetime': 'skip'
    })
    expect(electricReport.checks.find((check) => check.id === 'sse-lifetime')?.reason).toBe(
      'needs up to 61 s (max-age 59 s); --max-wait is 10 s'
    )
    expect(serviceReport.writeTable).toMatch(/^syncscope_check_[0-9a-f]{8}$/)
    expect(await tablesLike(service, 'syncscope_check_%')).toEqual([])
    expect(ConformanceReportSchema.parse(serviceReport)).toEqual(serviceReport)
  }, 120_000)

  it('without --write-sql skips what needs changes and says why; read-only checks still pass', async () => {
    const report = await runConformance(options(service, 'service', { writeSql: null }))
    expect(failures(report)).toEqual([])
    const byId = Object.fromEntries(report.checks.map((check) => [check.id, check]))
    expect(byId['must-refetch']).toMatchObject({
      status: 'skip',
      reason: 'needs --write-sql (a Postgres where the checker may create its own table)'
    })
    expect(byId['long-poll']?.reason).toContain('change delivery not tried: no --write-sql')
    expect(byId['long-poll']?.status).toBe('pass')
  }, 60_000)

  it('names the brand mismatch when the server speaks the other brand', async () => {
    const report = await runConformance(
      options(electric, 'service', { writeSql: null, only: ['initial-sync', 'offset-now'] })
    )
    const [finding] = report.checks[0]?.findings ?? []
    expect(finding).toMatchObject({
      id: 'headers.brand-mismatch',
      severity: 'error',
      rule: { doc: 'docs/protocol.md#header-brand' }
    })
    expect(finding?.message).toContain('run with --header-brand electric')
    expect(finding?.evidence[0]?.response?.headers).toContainEqual(['electric-offset', '0_0'])
    expect(report.summary.fail).toBe(2)
  }, 30_000)

  it('CLI: prints the report, writes JUnit, exits 0 when nothing failed and 1 when a check failed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-check-'))
    try {
      const passing = await cli([
        `${service.url}/v1/shape`,
        '--table',
        'issues',
        '--only',
        'initial-sync,handles,params',
        '--junit',
        join(dir, 'ok.xml')
      ])
      expect(passing.code).toBe(0)
      expect(passing.out).toMatch(
        /^PASS {2}initial-sync {2}Initial sync and chunking — 2 requests, \d+ messages, up to date at /m
      )
      expect(passing.out).toContain('3 checks: 3 passed, 0 failed, 0 with warnings, 0 skipped')
      const junit = await readFile(join(dir, 'ok.xml'), 'utf8')
      expect(junit).toContain('<testsuite name="syncscope check http://127.0.0.1:')
      expect(junit).toContain('tests="3" failures="0" errors="0" skipped="0"')

      const failing = await cli([
        `${electric.url}/v1/shape`,
        '--table',
        'issues',
        '--only',
        'initial-sync',
        '--json',
        '--junit',
        join(dir, 'fail.xml')
      ])
      expect(failing.code).toBe(1)
      const report = ConformanceReportSchema.parse(JSON.parse(failing.out))
      expect(report.checks[0]?.findings[0]?.id).toBe('headers.brand-mismatch')
      expect(await readFile(join(dir, 'fail.xml'), 'utf8')).toMatch(
        /<failure message="headers.brand-mismatch" type="headers.brand-mismatch">/
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it('the syncscope binary runs the check and exits with its code', async () => {
    const child = spawn(
      process.execPath,
      [
        join(__dirname, '../../bin/syncscope.js'),
        'check',
        `${service.url}/v1/shape`,
        '--table',
        'issues',
        '--only',
        'handles'
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] }
    )
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    const code = await new Promise((resolve) => child.once('exit', resolve))
    expect(code).toBe(0)
    expect(out).toMatch(/^PASS {2}handles {2}Unknown handle → 409 must-refetch {2}\(\d+\.\d s\)$/m)
  }, 30_000)

  it('CLI: a bad option or an unknown check is a usage error (exit 2) naming it', async () => {
    expect(await cli([])).toMatchObject({ code: 2, err: expect.stringContaining('the shape endpoint URL is missing') })
    expect(await cli(['ftp://x/v1/shape'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('the endpoint must be an http(s) URL')
    })
    expect(await cli([`${service.url}/v1/shape`, '--header', 'no-colon'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('--header must look like name:value')
    })
    expect(await cli([`${service.url}/v1/shape`, '--only', 'nope'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('unknown check nope; the checks are initial-sync,')
    })
    expect(await cli([`${service.url}/v1/shape`, '--write-sql', service.databaseUrl])).toMatchObject({
      code: 2,
      err: expect.stringContaining('--write-sql needs --table')
    })
    expect(await cli([`${service.url}/v1/shape`, '--header-brand', 'other'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('--header-brand must be `service` or `electric`')
    })
  })

  it('a --write-sql database the service does not follow: the live checks say so instead of judging the endpoint', async () => {
    const report = await runConformance(
      options(service, 'service', { writeSql: electric.databaseUrl, only: ['long-poll', 'must-refetch'] })
    )
    expect(report.summary).toMatchObject({ fail: 0, skip: 2 })
    for (const check of report.checks)
      expect(check.reason).toMatch(
        /^the checker's table syncscope_check_[0-9a-f]{8} could not be synced through the endpoint \(initial.status: offset=-1 was answered 400.*is --write-sql the database the service follows\?$/
      )
    expect(await tablesLike(electric, 'syncscope_check_%')).toEqual([])
  }, 30_000)

  it('an endpoint that is not there fails with the network error as evidence', async () => {
    const closedPort = await findFreePort()
    const report = await runConformance({
      ...options(service, 'service', { writeSql: null, only: ['initial-sync'] }),
      url: `http://127.0.0.1:${closedPort}/v1/shape`
    })
    expect(report.checks[0]?.findings[0]).toMatchObject({
      id: 'setup.unreachable',
      evidence: [{ error: expect.stringContaining('ECONNREFUSED') }]
    })
  })
})
