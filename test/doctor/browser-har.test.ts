import { afterAll, beforeAll, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { diagnoseRecording } from '../../src/main/doctor/doctor'
import { formatDoctorReport } from '../../src/main/doctor/format'
import type { DoctorReport } from '../../src/shared/contract/doctor'
import {
  appState,
  isLive,
  startBrowserHarRecorder,
  waitForState,
  type BrowserHarRecorder,
  type ShapeTraffic
} from '../support/browser-har'
import { describeWith } from '../support/facility-tests'
import { SOUND, startNginx } from '../support/nginx'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const ids = (report: DoctorReport) => [...new Set(report.findings.map((finding) => finding.id))].sort()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A cache key naming the parameters the proxy's author knew of: no `handle`, `cache-buster` or `expired_handle`. */
const KEY_WITHOUT_HANDLE =
  'proxy_cache_key $scheme$proxy_host$uri?table=$arg_table&offset=$arg_offset&live=$arg_live&cursor=$arg_cursor;'
/** …and one without the `cursor`, with the origin's cache-control ignored. */
const LIVE_CACHED_WITHOUT_CURSOR = `proxy_ignore_headers Cache-Control Expires; proxy_cache_valid 200 10m; proxy_cache_key $scheme$proxy_host$uri?table=$arg_table&offset=$arg_offset&handle=$arg_handle&live=$arg_live;`

describeWith(['nginx', 'chromium'], 'sync doctor on HAR files Chromium recorded through nginx', () => {
  let server: TestShapeServer
  let browser: BrowserHarRecorder

  beforeAll(async () => {
    server = await startTestShapeServer({
      headerBrand: 'electric',
      longPollTimeout: 1_500,
      sseKeepAlive: 1_000,
      chunkBytes: 100_000
    })
    browser = await startBrowserHarRecorder()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  async function recordThrough(
    location: string,
    drive: (page: Page, traffic: ShapeTraffic) => Promise<void>,
    options: { sse?: boolean } = {}
  ): Promise<DoctorReport> {
    const nginx = await startNginx(server.url, location)
    try {
      const har = await browser.record(`${nginx.url}/v1/shape`, drive, options)
      if (process.env.DOCTOR_HAR_DUMP) (await import('node:fs')).writeFileSync(process.env.DOCTOR_HAR_DUMP, har)
      const report = diagnoseRecording('chromium.har', har)
      if (process.env.SYNCSCOPE_DEBUG) process.stderr.write(formatDoctorReport(report))
      return report
    } finally {
      await nginx.close()
    }
  }

  let nextId = 97_000
  const insertRow = (title: string) =>
    server.pool.query('INSERT INTO issues (id, project_id, title) VALUES ($1, 1000000001, $2)', [nextId++, title])

  /** Drops the shape the page follows on the server, as a schema change or an operator would. */
  async function dropShape(page: Page): Promise<void> {
    const handle = await page.evaluate(
      () => (globalThis as unknown as { stream: { shapeHandle?: string } }).stream.shapeHandle
    )
    const response = await fetch(`${server.url}/v1/shape?table=issues&handle=${handle}`, { method: 'DELETE' })
    expect(response.status).toBe(202)
  }

  it('a healthy session through a sound caching proxy gets no finding', async () => {
    const report = await recordThrough(SOUND, async (page, traffic) => {
      await waitForState(page, (state) => state.upToDate > 0)
      const before = (await appState(page)).changes
      await insertRow('doctor healthy')
      await waitForState(page, (state) => state.changes > before)
      // and a long-poll after it, held to its timeout: what the note explains
      const seen = traffic.finished.length
      await traffic.until('long-poll held to its timeout', (finished) =>
        finished.slice(seen).some((request) => isLive(request) && request.ms >= 1_000)
      )
    })
    expect(report.timeline.length).toBeGreaterThan(2)
    expect(report.findings.map((finding) => `${finding.id}: ${finding.message}`)).toEqual([])
    expect(report.notes.join('\n')).toMatch(/long-polls/)
  }, 60_000)

  it('a healthy SSE session through a sound proxy gets no finding', async () => {
    const report = await recordThrough(
      SOUND,
      async (page) => {
        await waitForState(page, (state) => state.upToDate > 0)
        const before = (await appState(page)).changes
        await insertRow('doctor healthy sse')
        await waitForState(page, (state) => state.changes > before)
        await sleep(3_000)
      },
      { sse: true }
    )
    expect(report.timeline.some((entry) => entry.request.live === 'sse')).toBe(true)
    expect(report.findings.map((finding) => `${finding.id}: ${finding.message}`)).toEqual([])
  }, 60_000)

  it('a must-refetch loop on an old handle from the proxy cache (cache key without handle and cache-buster)', async () => {
    const report = await recordThrough(`${SOUND} ${KEY_WITHOUT_HANDLE}`, async (page, traffic) => {
      await waitForState(page, (state) => state.upToDate > 0)
      await dropShape(page)
      // the loop: three must-refetches, the old handle answered from the cache each time
      await traffic.until(
        'must-refetches',
        (finished) => finished.filter((request) => request.status === 409).length >= 3
      )
    })
    expect(ids(report)).toEqual(expect.arrayContaining(['doctor.refetch-loop', 'doctor.stale-handle']))
    expect(report.findings.find((finding) => finding.id === 'doctor.refetch-loop')!.message).toMatch(
      /caused by an old handle served from a cache/
    )
    const stale = report.findings.find((finding) => finding.id === 'doctor.stale-handle')!
    expect(stale.message).toMatch(/x-cache-status: HIT/)
    expect(stale.fix).toMatch(/proxy_cache_key/)
  }, 60_000)

  it('stale live answers: the cache repeats a cursor (cache-control ignored, key without cursor)', async () => {
    const report = await recordThrough(`${SOUND} ${LIVE_CACHED_WITHOUT_CURSOR}`, async (page, traffic) => {
      await waitForState(page, (state) => state.upToDate > 0)
      // The first live answer (the 1.5 s long-poll timeout) is cached; every later live request gets it again.
      await traffic.until(
        'live answers repeated by the cache',
        (finished) =>
          finished.filter((request) => isLive(request) && request.headers['x-cache-status'] === 'HIT').length >= 2
      )
    })
    expect(ids(report)).toContain('doctor.stale-live')
    expect(report.findings.find((finding) => finding.id === 'doctor.stale-live')!.fix).toMatch(
      /proxy_ignore_headers Cache-Control/
    )
  }, 60_000)

  it('up-to-date never reached: a cache key without the query string hands every request the first chunk', async () => {
    const report = await recordThrough(`${SOUND} proxy_cache_key $scheme$proxy_host$uri;`, async (page, traffic) => {
      // request after request, each handed the first chunk again
      await traffic.until('answers', (finished) => finished.filter((request) => request.status === 200).length >= 4)
      expect((await appState(page)).upToDate).toBe(0)
    })
    expect(ids(report)).toContain('doctor.up-to-date-never')
    const finding = report.findings.find((item) => item.id === 'doctor.up-to-date-never')!
    expect(finding.message).toMatch(/keyed without the query string/)
    expect(finding.fix).toMatch(/proxy_cache_key/)
  }, 60_000)

  it("SSE buffered by the proxy (X-Accel-Buffering ignored): the stream's head is held back", async () => {
    const report = await recordThrough(
      'proxy_ignore_headers X-Accel-Buffering;',
      async (page) => {
        await waitForState(page, (state) => state.upToDate > 0)
        await sleep(8_000)
      },
      { sse: true }
    )
    expect(ids(report)).toContain('doctor.sse-buffered')
  }, 60_000)
})
