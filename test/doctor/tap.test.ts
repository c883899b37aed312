import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { doctorMain, tapMain } from '../../src/main/cli/doctor'
import { diagnoseRecording } from '../../src/main/doctor/doctor'
import { startTap, type RunningTap } from '../../src/main/doctor/tap'
import { toRecording } from '../../src/shared/doctor-recording'
import { Shape } from '../../src/shared/shape-client'
import { waitFor } from '../shape-client/support'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const ROW = '"public"."issues"/"98001"'

describe('syncscope tap, the recording proxy, and syncscope doctor on what it wrote', () => {
  let server: TestShapeServer
  let dir: string
  let tap: RunningTap
  let harFile: string

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000, sseKeepAlive: 300 })
    dir = await mkdtemp(join(tmpdir(), 'syncscope-tap-'))
    harFile = join(dir, 'tap.har')
    tap = await startTap({ upstream: server.url, host: '127.0.0.1', port: 0, out: harFile })
  })
  afterAll(async () => {
    await tap?.close()
    await server?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it("passes a client's long-polls and SSE through unbuffered, records them, and the doctor finds nothing wrong", async () => {
    const shape = new Shape({
      url: `${tap.url}/v1/shape`,
      params: { table: 'issues', where: 'id > 98000' },
      live: 'sse'
    })
    void shape.start()
    try {
      await waitFor(
        () => shape.stream.current.upToDate && shape.stream.current.phase === 'live',
        'the initial sync through the tap'
      )
      await new Promise((resolve) => setTimeout(resolve, 400))
      await server.pool.query(
        "INSERT INTO issues (id, project_id, title) VALUES (98001, 1000000001, 'through the tap')"
      )
      await waitFor(() => shape.rows.has(ROW), 'the change over SSE')
      await new Promise((resolve) => setTimeout(resolve, 500))
    } finally {
      shape.stop()
    }
    const streams = shape.stream.recorder.exchanges.filter((exchange) => exchange.request.live === 'sse')
    expect(streams.length).toBeGreaterThan(0)

    await tap.close()
    const har = await readFile(harFile, 'utf8')
    const recorded = JSON.parse(har) as {
      log: {
        creator: { name: string }
        entries: Array<{ request: { url: string }; _frames: Array<{ atMs: number; raw: string }>; time: number }>
      }
    }
    expect(recorded.log.creator.name).toBe('syncscope tap')
    const withChange = recorded.log.entries.find((entry) => entry._frames.some((frame) => frame.raw.includes('98001')))
    expect(withChange?.request.url).toContain('live_sse=true')
    const change = withChange!._frames.find((frame) => frame.raw.includes('98001'))!
    // The change passed through while its stream stayed open (the client was stopped half a second after it arrived).
    expect(withChange!.time - change.atMs).toBeGreaterThanOrEqual(400)

    const report = diagnoseRecording('tap.har', har)
    expect(report.timeline.length).toBe(recorded.log.entries.length)
    expect(report.findings.map((finding) => `${finding.id}: ${finding.message}`)).toEqual([])
    // The client's own recording of the same session reads the same way.
    expect(diagnoseRecording('session.json', JSON.stringify(toRecording([shape.stream.recorder]))).findings).toEqual([])

    const out: string[] = []
    const io = { out: (text: string) => out.push(text), err: (text: string) => out.push(text) }
    expect(await doctorMain([harFile], io)).toBe(0)
    expect(out.join('')).toMatch(/No problem found/)
    out.length = 0
    expect(await doctorMain([harFile, '--json'], io)).toBe(0)
    expect(JSON.parse(out.join('')).findings).toEqual([])
    const bundle = join(dir, 'bundle.har')
    expect(await doctorMain([harFile, '--redact', bundle], io)).toBe(0)
    expect((await stat(bundle)).mode & 0o777).toBe(0o600)
    expect(diagnoseRecording('bundle.har', await readFile(bundle, 'utf8')).timeline.length).toBe(report.timeline.length)
  }, 60_000)

  it('refuses a request for another Host (DNS rebinding) and answers 502 naming an unreachable upstream', async () => {
    const other = await startTap({
      upstream: 'http://127.0.0.1:9',
      host: '127.0.0.1',
      port: 0,
      out: join(dir, 'other.har')
    })
    try {
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        request(`${other.url}/v1/shape?table=issues&offset=-1`, { headers: { host: 'evil.test' } }, (res) => {
          let body = ''
          res
            .on('data', (chunk: Buffer) => (body += chunk.toString()))
            .on('end', () => resolve({ status: res.statusCode ?? 0, body }))
        })
          .on('error', reject)
          .end()
      })
      expect(refused.status).toBe(403)
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'foreign_host' })
      const unreachable = await fetch(`${other.url}/v1/shape?table=issues&offset=-1`)
      expect(unreachable.status).toBe(502)
      expect(await unreachable.json()).toMatchObject({
        code: 'upstream_unreachable',
        message: expect.stringContaining('http://127.0.0.1:9')
      })
    } finally {
      await other.close()
    }
  })

  it('the CLI refuses bad arguments and unreadable files with the reason and exit code 2', async () => {
    const lines: string[] = []
    const io = { out: (text: string) => lines.push(text), err: (text: string) => lines.push(text) }
    expect(await tapMain(['--port', '3100'], io)).toBe(2)
    expect(lines.join('')).toMatch(/--upstream is required/)
    lines.length = 0
    expect(await tapMain(['--upstream', 'ftp://example.com'], io)).toBe(2)
    expect(lines.join('')).toMatch(/--upstream must be an http\(s\) URL/)
    lines.length = 0
    expect(await doctorMain([join(dir, 'missing.har')], io)).toBe(2)
    expect(lines.join('')).toMatch(/cannot read .*missing\.har: no such file/)
    lines.length = 0
    await writeFile(join(dir, 'broken.har'), '{"log": {"entries": [{}]}}')
    expect(await doctorMain([join(dir, 'broken.har')], io)).toBe(2)
    expect(lines.join('')).toMatch(
      /broken\.har: not a HAR 1\.2 file the doctor can read: log\.entries\[0\]\.startedDateTime/
    )
    expect(lines.join('')).not.toMatch(/ at .*\.ts:\d+/)
  })
})
