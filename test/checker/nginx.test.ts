import { afterAll, beforeAll, expect, it } from 'vitest'
import { runConformance } from '../../src/main/checker/run'
import type { ConformanceReport } from '../../src/shared/contract/checker'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { SOUND, startNginx } from '../support/nginx'
import { describeWith } from '../support/facility-tests'

/** nginx in front of this app, configured wrong in five known ways, and the findings each must produce. */
const MISCONFIGURED: Array<{ name: string; location: string; http?: string; named: string[] }> = [
  {
    name: 'a cache key without the query string',
    location: `${SOUND} proxy_cache_key $scheme$proxy_host$uri;`,
    named: ['cache.query-ignored']
  },
  // nginx's defaults (HTTP/1.0 upstream, proxy_buffering on) with the server's `X-Accel-Buffering: no` ignored
  { name: 'SSE buffered', location: 'proxy_ignore_headers X-Accel-Buffering;', named: ['sse.buffered'] },
  {
    name: 'proxy_ignore_headers Cache-Control Vary',
    location: `${SOUND} proxy_ignore_headers Cache-Control Vary; proxy_cache_valid 200 10m;`,
    named: ['cache.cache-control-ignored', 'cache.vary-ignored']
  },
  {
    name: 'gzip on SSE',
    location: 'proxy_http_version 1.1;',
    http: 'gzip on; gzip_types text/event-stream; gzip_min_length 1;',
    named: ['sse.compressed']
  },
  {
    name: 'protocol headers stripped',
    location: `${SOUND} proxy_hide_header service-handle; proxy_hide_header service-offset; proxy_hide_header service-schema; proxy_hide_header service-cursor;`,
    named: ['headers.missing']
  }
]
const MISCONFIGURATION_IDS = new Set(MISCONFIGURED.flatMap((config) => config.named))

const findingIds = (report: ConformanceReport) =>
  new Set(report.checks.flatMap((check) => check.findings.map((finding) => finding.id)))

describeWith(['nginx'], 'syncscope check through nginx', () => {
  let server: TestShapeServer

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 2_000, sseKeepAlive: 1_000 })
  })
  afterAll(async () => {
    await server?.close()
  })

  async function checkThrough(location: string, http = ''): Promise<ConformanceReport> {
    const nginx = await startNginx(server.url, location, http)
    try {
      return await runConformance({
        url: `${nginx.url}/v1/shape`,
        headerBrand: 'service',
        table: 'issues',
        writeSql: server.databaseUrl,
        headers: {},
        params: {},
        only: [],
        maxWaitSeconds: 10
      })
    } finally {
      await nginx.close()
    }
  }

  it('a sound caching proxy passes every check', async () => {
    const report = await checkThrough(SOUND)
    expect(
      report.checks.flatMap((check) => check.findings.map((finding) => `${check.id}: ${finding.id} ${finding.message}`))
    ).toEqual([])
    expect(report.summary.fail).toBe(0)
  }, 60_000)

  for (const config of MISCONFIGURED) {
    it(`${config.name}: named ${config.named.join(' and ')}, with the fix`, async () => {
      const report = await checkThrough(config.location, config.http)
      const named = [...findingIds(report)].filter((id) => MISCONFIGURATION_IDS.has(id))
      expect(named.sort()).toEqual([...config.named].sort())
      const findings = report.checks
        .flatMap((check) => check.findings)
        .filter((finding) => config.named.includes(finding.id))
      for (const finding of findings) {
        expect(finding.fix).toMatch(/nginx/)
        expect(finding.rule.doc).toMatch(/^docs\/protocol\.md#/)
        expect(finding.evidence.length).toBeGreaterThan(0)
      }
      expect(report.summary.fail).toBeGreaterThan(0)
    }, 60_000)
  }
})
