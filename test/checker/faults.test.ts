import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkMain } from '../../src/main/cli/check'
import { CHECKS, runConformance } from '../../src/main/checker/run'
import { RULES } from '../../src/main/checker/rules'
import { ConformanceReportSchema, type ConformanceReport } from '../../src/shared/contract/checker'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { startFaultProxy, type FaultProxy } from './support/fault-proxy'
import { FAULTS, type FaultCase } from './support/faults'

const SOUND = 'sound'
/** A sound service that closes the connection under each request the first time it is asked (a keep-alive race). */
const CLOSES_ONCE = 'closes-each-connection-once'
const findingsOf = (report: ConformanceReport) => report.checks.flatMap((check) => check.findings)

/**
 * A Postgres that refuses the checker's writes once its table exists (a trigger on every syncscope_check_* table,
 * for sessions named `syncscope-refused`): the live checks throw in the middle of a run.
 */
const REFUSE_CHECKER_WRITES = `
CREATE OR REPLACE FUNCTION refuse_checker_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('application_name') = 'syncscope-refused' AND NEW.label <> 'seed' THEN
    RAISE EXCEPTION 'writes refused for this session';
  END IF;
  RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION add_checker_refusal() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE created record;
BEGIN
  FOR created IN SELECT object_identity FROM pg_event_trigger_ddl_commands() WHERE object_type = 'table' LOOP
    IF created.object_identity LIKE 'public.syncscope_check_%' THEN
      EXECUTE format('CREATE TRIGGER refuse BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION refuse_checker_write()', created.object_identity);
    END IF;
  END LOOP;
END $$;
CREATE EVENT TRIGGER checker_refusal ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION add_checker_refusal();
`

describe('syncscope check names each fault by its cause (a fault-injecting proxy in front of this app)', () => {
  let server: TestShapeServer
  let proxy: FaultProxy
  const reports = new Map<string, Promise<ConformanceReport>>()

  const check = (mode: string, fault?: Partial<FaultCase>) =>
    runConformance({
      url: proxy.endpoint(mode),
      headerBrand: 'service',
      table: 'issues',
      writeSql: !fault || fault.writes ? server.databaseUrl : null,
      headers: {},
      params: {},
      only: fault?.checks ?? [],
      maxWaitSeconds: fault?.maxWaitSeconds ?? 10
    })

  beforeAll(async () => {
    // chunks of 1 MB: the initial sync of `issues` takes a few catch-up requests
    server = await startTestShapeServer({ longPollTimeout: 2_000, sseKeepAlive: 1_000, chunkBytes: 1_000_000 })
    const asked = new Set<string>()
    proxy = await startFaultProxy(server.url, {
      [SOUND]: {},
      [CLOSES_ONCE]: {
        request: ({ method, url }) =>
          asked.has(`${method} ${url.href}`) ? undefined : (asked.add(`${method} ${url.href}`), 'reset')
      },
      ...Object.fromEntries(FAULTS.map((fault) => [fault.mode, fault.fault]))
    })
    // every mode's run at once, against the one server; each test below waits for its own
    reports.set(SOUND, check(SOUND))
    reports.set(CLOSES_ONCE, check(CLOSES_ONCE, { checks: ['initial-sync', 'offset-now', 'handles', 'cors'] }))
    for (const fault of FAULTS) reports.set(fault.mode, check(fault.mode, fault))
    for (const report of reports.values()) report.catch(() => undefined)
  })
  afterAll(async () => {
    await Promise.allSettled(reports.values())
    await proxy?.close()
    await server?.close()
  })

  it('a sound service behind the proxy passes every check', async () => {
    const report = (await reports.get(SOUND))!
    expect(findingsOf(report).map((finding) => `${finding.id}: ${finding.message}`)).toEqual([])
    expect(report.summary).toEqual({ pass: CHECKS.length - 1, fail: 0, warn: 0, skip: 1, error: 0 })
  })

  it('a connection closed under a safe request is tried again once, as clients do: no finding', async () => {
    const report = (await reports.get(CLOSES_ONCE))!
    expect(findingsOf(report).map((finding) => `${finding.id}: ${finding.message}`)).toEqual([])
    expect(report.summary).toMatchObject({ pass: 4, fail: 0 })
  })

  it.each(FAULTS)('$mode — $what: named $finding, with its cause and fix', async (fault) => {
    const report = (await reports.get(fault.mode))!
    const findings = findingsOf(report)
    const seen = report.checks.map((check) => ({
      check: `${check.id}: ${check.status}${check.reason ? ` (${check.reason})` : ''}`,
      findings: check.findings.map((finding) => `${finding.id}: ${finding.message}`)
    }))
    expect([...new Set(findings.map((finding) => finding.id))].sort(), JSON.stringify(seen, null, 1)).toEqual(
      [fault.finding, ...(fault.also ?? [])].sort()
    )
    for (const finding of findings.filter(({ id }) => id === fault.finding)) {
      expect(finding.message).toMatch(fault.cause)
      if (fault.fix) expect(finding.fix).toMatch(fault.fix)
      else expect(finding.fix).toBeNull()
      expect(finding.rule.doc).toMatch(/^docs\/protocol\.md#/)
      expect(finding.evidence.length).toBeGreaterThan(0)
    }
    const severity = RULES[fault.finding].severity
    expect(report.summary[severity === 'error' ? 'fail' : 'warn']).toBeGreaterThan(0)
  })

  it('every finding id of the catalogue is produced by a fault mode above', () => {
    const produced = new Set(FAULTS.map((fault) => fault.finding))
    expect(Object.keys(RULES).filter((id) => !produced.has(id as FaultCase['finding']))).toEqual([])
  })

  it('a check that throws is an error: it counts as failed, the exit code is 1, JUnit has an <error>', async () => {
    await server.pool.query(REFUSE_CHECKER_WRITES)
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-check-error-'))
    try {
      let out = ''
      const url = new URL(server.databaseUrl)
      url.searchParams.set('application_name', 'syncscope-refused')
      const code = await checkMain(
        [
          proxy.endpoint(SOUND),
          '--table',
          'issues',
          '--write-sql',
          url.toString(),
          '--only',
          'long-poll',
          '--max-wait',
          '10',
          '--json',
          '--junit',
          join(dir, 'report.xml')
        ],
        { out: (text) => (out += text), err: () => undefined }
      )
      expect(code).toBe(1)
      const report = ConformanceReportSchema.parse(JSON.parse(out))
      expect(report.checks[0]).toMatchObject({
        id: 'long-poll',
        status: 'error',
        reason: expect.stringContaining('writes refused for this session')
      })
      expect(report.summary).toMatchObject({ error: 1, fail: 0, skip: 0 })
      const junit = await readFile(join(dir, 'report.xml'), 'utf8')
      expect(junit).toContain('tests="1" failures="0" errors="1" skipped="0"')
      expect(junit).toMatch(/<error message="[^"]*writes refused for this session[^"]*"/)
    } finally {
      await server.pool.query('DROP EVENT TRIGGER checker_refusal')
      await rm(dir, { recursive: true, force: true })
    }
  })
})
