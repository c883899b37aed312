import { describe, expect, it } from 'vitest'
import { diagnoseRecording } from '../../src/main/doctor/doctor'
import { formatDoctorReport } from '../../src/main/doctor/format'
import { RecordingInputError } from '../../src/main/doctor/input'
import { toRecording } from '../../src/shared/doctor-recording'
import { ShapeRecorder } from '../../src/shared/shape-client/recorder'
import { har, type EntrySpec, insert, mustRefetch, shapeHeaders, update, upToDate } from './har-builder'

const ids = (text: string) =>
  [...new Set(diagnoseRecording('test.har', text).findings.map((finding) => finding.id))].sort()

/** A sound session: the snapshot in two chunks, up-to-date, a long-poll held 20 s, one with a change. */
const HEALTHY: EntrySpec[] = [
  {
    at: 0,
    params: { offset: '-1' },
    status: 200,
    headers: shapeHeaders('h1', '0_0', { 'x-cache': 'MISS' }),
    body: [insert(1), insert(2)]
  },
  {
    at: 100,
    params: { offset: '0_0', handle: 'h1' },
    status: 200,
    headers: shapeHeaders('h1', '0_inf', { 'electric-up-to-date': '' }),
    body: [upToDate]
  },
  {
    at: 200,
    params: { offset: '0_inf', handle: 'h1', live: 'true' },
    status: 200,
    headers: shapeHeaders('h1', '0_inf', { 'electric-cursor': '100', 'electric-up-to-date': '' }),
    body: [upToDate],
    wait: 20_000
  },
  {
    at: 20_300,
    params: { offset: '0_inf', handle: 'h1', live: 'true', cursor: '100' },
    status: 200,
    headers: shapeHeaders('h1', '27_2', { 'electric-cursor': '120', 'electric-up-to-date': '' }),
    body: [update(1), insert(3), upToDate],
    wait: 3_000
  },
  {
    at: 23_400,
    params: { offset: '27_2', handle: 'h1', live: 'true', cursor: '120' },
    status: 200,
    headers: shapeHeaders('h1', '27_2', { 'electric-cursor': '140', 'electric-up-to-date': '' }),
    body: [upToDate],
    wait: 20_000
  }
]

describe("the sync doctor's rules", () => {
  it('a healthy session gets no finding, and its long-polls are explained, not blamed', () => {
    const report = diagnoseRecording('healthy.har', har(...HEALTHY))
    expect(report.findings).toEqual([])
    expect(report.timeline.map((entry) => entry.n)).toEqual([1, 2, 3, 4, 5])
    expect(report.notes.join('\n')).toMatch(/#3 \(20\.0 s\).*long-polls.*by design/)
    expect(formatDoctorReport(report)).toMatch(/No problem found/)
  })

  it('a must-refetch loop caused by a cached 409', () => {
    const loop = [0, 1, 2].flatMap((round): EntrySpec[] => [
      {
        at: round * 1_000,
        params: { offset: '-1', ...(round ? { 'cache-buster': String(round) } : {}) },
        status: 200,
        headers: shapeHeaders('h2', '0_inf', { 'electric-up-to-date': '' }),
        body: [insert(1), upToDate]
      },
      {
        at: round * 1_000 + 100,
        params: { offset: '0_inf', handle: 'h2', live: 'true' },
        status: 409,
        headers: { 'electric-handle': 'h3', 'cf-cache-status': 'HIT', age: '40' },
        body: mustRefetch
      }
    ])
    const report = diagnoseRecording('loop.har', har(...loop))
    expect(ids(har(...loop))).toEqual(['doctor.cached-conflict', 'doctor.refetch-loop'])
    const finding = report.findings.find((item) => item.id === 'doctor.refetch-loop')!
    expect(finding.message).toMatch(/3 must-refetches .*#2, #4, #6.*a cached 409/)
    expect(finding.fix).toMatch(/proxy_cache_valid/)
    expect(report.findings.find((item) => item.id === 'doctor.cached-conflict')!.message).toMatch(
      /cf-cache-status: HIT/
    )
  })

  it("an old handle from the browser cache: the fix names the client's missing cache-buster", () => {
    const text = har(
      {
        at: 0,
        params: { offset: '-1' },
        status: 200,
        headers: shapeHeaders('h1', '0_inf', { 'electric-up-to-date': '' }),
        body: [insert(1), upToDate]
      },
      {
        at: 100,
        params: { offset: '0_inf', handle: 'h1', live: 'true' },
        status: 409,
        headers: { 'electric-handle': 'h2' },
        body: mustRefetch
      },
      {
        at: 200,
        params: { offset: '-1' },
        status: 200,
        headers: shapeHeaders('h1', '0_inf', { 'electric-up-to-date': '' }),
        body: [insert(1), upToDate],
        fromCache: 'disk'
      }
    )
    const finding = diagnoseRecording('browser.har', text).findings.find((item) => item.id === 'doctor.stale-handle')!
    expect(finding.message).toMatch(/#3: .*#2 got the refused handle h1 again, from the browser's own cache/)
    expect(finding.fix).toMatch(/cache-buster/)
  })

  it('missing messages: a continuation past the offset the log was read to', () => {
    const text = har(
      { at: 0, params: { offset: '-1' }, status: 200, headers: shapeHeaders('h1', '10_0'), body: [insert(1)] },
      {
        at: 100,
        params: { offset: '12_0', handle: 'h1' },
        status: 200,
        headers: shapeHeaders('h1', '12_4', { 'electric-up-to-date': '' }),
        body: [upToDate]
      }
    )
    const finding = diagnoseRecording('gap.har', text).findings.find((item) => item.id === 'doctor.missing-messages')!
    expect(finding.message).toMatch(/#2.*asked 12_0, the log was read to 10_0/)
  })

  it('missing messages: an update of a key never inserted', () => {
    expect(
      ids(
        har({
          at: 0,
          params: { offset: '-1' },
          status: 200,
          headers: shapeHeaders('h1', '10_0', { 'electric-up-to-date': '' }),
          body: [insert(1), update(7), upToDate]
        })
      )
    ).toEqual(['doctor.missing-messages'])
  })

  it('duplicated messages: the same key inserted twice, and the same part of the log read twice', () => {
    expect(
      ids(
        har({
          at: 0,
          params: { offset: '-1' },
          status: 200,
          headers: shapeHeaders('h1', '10_0', { 'electric-up-to-date': '' }),
          body: [insert(1), insert(1), upToDate]
        })
      )
    ).toEqual(['doctor.duplicate-messages'])
    const reread = har(
      {
        at: 0,
        params: { offset: '-1' },
        status: 200,
        headers: shapeHeaders('h1', '0_inf', { 'electric-up-to-date': '' }),
        body: [insert(1), upToDate]
      },
      {
        at: 100,
        params: { offset: '0_inf', handle: 'h1', live: 'true' },
        status: 200,
        headers: shapeHeaders('h1', '20_0', { 'electric-cursor': '5', 'electric-up-to-date': '' }),
        body: [insert(2), upToDate]
      },
      {
        at: 200,
        params: { offset: '0_inf', handle: 'h1', live: 'true' },
        status: 200,
        headers: shapeHeaders('h1', '20_0', { 'electric-cursor': '6', 'electric-up-to-date': '' }),
        body: [insert(2), upToDate]
      }
    )
    expect(ids(reread)).toContain('doctor.duplicate-messages')
  })

  it('offsets going backwards', () => {
    const text = har(
      { at: 0, params: { offset: '-1' }, status: 200, headers: shapeHeaders('h1', '30_0'), body: [insert(1)] },
      {
        at: 100,
        params: { offset: '30_0', handle: 'h1' },
        status: 200,
        headers: shapeHeaders('h1', '10_0', { 'electric-up-to-date': '' }),
        body: [upToDate]
      }
    )
    expect(ids(text)).toEqual(['doctor.offset-backwards'])
  })

  it('up-to-date never reached, with a cache keyed without the query string as the cause', () => {
    const chunk = {
      status: 200,
      headers: shapeHeaders('h1', '10_0', { etag: '"h1:-1:10_0"', 'x-cache-status': 'HIT' }),
      body: [insert(1)]
    }
    const text = har(
      { at: 0, params: { offset: '-1' }, ...chunk },
      { at: 100, params: { offset: '10_0', handle: 'h1' }, ...chunk },
      { at: 200, params: { offset: '10_0', handle: 'h1' }, ...chunk }
    )
    const finding = diagnoseRecording('stuck.har', text).findings.find((item) => item.id === 'doctor.up-to-date-never')!
    expect(finding.message).toMatch(/none said up-to-date.*etag "h1:-1:10_0".*keyed without the query string/)
    expect(finding.fix).toMatch(/proxy_cache_key/)
  })

  it("SSE held back by a proxy, and the client's fallback to long-polling", () => {
    const frames = `data: ${JSON.stringify(insert(2))}\n\ndata: ${JSON.stringify({ headers: { control: 'up-to-date', global_last_seen_lsn: '20' } })}\n\n`
    const sse = (at: number) => ({
      at,
      params: { offset: '0_inf', handle: 'h1', live: 'true', live_sse: 'true' },
      status: 200,
      headers: shapeHeaders('h1', '0_inf', { 'electric-cursor': '5' }),
      text: frames,
      wait: 8_000,
      receive: 3
    })
    const text = har(
      {
        at: 0,
        params: { offset: '-1' },
        status: 200,
        headers: shapeHeaders('h1', '0_inf', { 'electric-up-to-date': '' }),
        body: [insert(1), upToDate]
      },
      sse(100),
      sse(8_200),
      sse(16_300),
      {
        at: 24_400,
        params: { offset: '20_0', handle: 'h1', live: 'true', cursor: '5' },
        status: 200,
        headers: shapeHeaders('h1', '20_0', { 'electric-cursor': '6', 'electric-up-to-date': '' }),
        body: [upToDate],
        wait: 20_000
      }
    )
    const finding = diagnoseRecording('sse.har', text).findings.find((item) => item.id === 'doctor.sse-buffered')!
    expect(finding.message).toMatch(/#2, #3, #4: .*8\.0 s after the request.*from #5 on the client long-polls instead/)
    expect(finding.fix).toMatch(/proxy_buffering off/)
  })

  it('an SSE request still without a response head when the recording ended was held back', () => {
    const text = har(
      {
        at: 0,
        params: { offset: '-1' },
        status: 200,
        headers: shapeHeaders('h1', '0_inf', { 'electric-up-to-date': '' }),
        body: [insert(1), upToDate]
      },
      { at: 100, params: { offset: '0_inf', handle: 'h1', live: 'true', live_sse: 'true' }, status: -1, text: '' }
    )
    expect(diagnoseRecording('sse.har', text).findings.map((finding) => finding.message)).toEqual([
      expect.stringMatching(/^#2: the SSE request had no response head by the end of the recording/)
    ])
  })

  it('compressed SSE, protocol headers stripped, a cached error and a long-poll cut by a gateway', () => {
    const text = har(
      {
        at: 0,
        params: { offset: '-1' },
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: [insert(1), upToDate]
      },
      {
        at: 100,
        params: { offset: '0_inf', handle: 'h1', live: 'true', live_sse: 'true' },
        status: 200,
        headers: shapeHeaders('h1', '0_inf', { 'content-encoding': 'gzip', 'electric-cursor': '3' }),
        text: ': keep-alive\n\n'
      },
      {
        at: 200,
        params: { offset: '0_inf', handle: 'h1', where: 'nope(' },
        status: 400,
        headers: { 'x-proxy-cache': 'HIT' },
        body: { message: 'bad where' }
      },
      {
        at: 300,
        params: { offset: '0_inf', handle: 'h1', live: 'true' },
        status: 504,
        headers: { 'content-type': 'text/html' },
        text: '<html>504</html>',
        wait: 10_000
      }
    )
    expect(ids(text)).toEqual(
      expect.arrayContaining([
        'doctor.cached-error',
        'doctor.headers-missing',
        'doctor.live-cut',
        'doctor.sse-compressed'
      ])
    )
  })

  it("reads a Syncscope recording of the shape client (the workbench's Requests)", () => {
    const recorder = new ShapeRecorder()
    const json = (handle: string, offset: string, extra: Array<[string, string]> = []): Array<[string, string]> => [
      ['electric-handle', handle],
      ['electric-offset', offset],
      ['electric-schema', '{}'],
      ...extra
    ]
    const first = recorder.request(
      'GET',
      'http://127.0.0.1:3000/v1/shape?table=issues&offset=-1&secret=hunter2-long-secret',
      [['authorization', 'Bearer abcdefghijkl']],
      'off'
    )
    recorder.response(first, { status: 200, statusText: 'OK', headers: json('h1', '5_0') })
    recorder.body(first, JSON.stringify([insert(1)]), 10)
    const second = recorder.request(
      'GET',
      'http://127.0.0.1:3000/v1/shape?table=issues&offset=9_0&handle=h1',
      [],
      'off'
    )
    recorder.response(second, {
      status: 200,
      statusText: 'OK',
      headers: json('h1', '9_0', [['electric-up-to-date', '']])
    })
    recorder.body(second, JSON.stringify([upToDate]), 10)
    const report = diagnoseRecording('session.json', JSON.stringify(toRecording([recorder])))
    expect(report.source.kind).toBe('recording')
    expect(report.findings.map((finding) => finding.id)).toEqual(['doctor.missing-messages'])
    expect(JSON.stringify(report)).not.toContain('hunter2-long-secret')
  })

  it("reads what browsers really write: Firefox's -1 timings, base64 bodies, status 0 for a blocked request, non-shape entries", () => {
    const file = JSON.parse(har(...HEALTHY)) as {
      log: {
        entries: Array<{
          startedDateTime: string
          time: number
          request: { url: string }
          response: { content?: unknown; [field: string]: unknown }
        }>
      }
    }
    file.log.entries[0]!.response.content = {
      size: 10,
      mimeType: 'application/json',
      encoding: 'base64',
      text: Buffer.from(JSON.stringify([insert(1), insert(2)])).toString('base64')
    }
    file.log.entries[1]!.time = -1
    const second = file.log.entries[1]!
    file.log.entries.push({
      ...second,
      request: { ...second.request, url: 'https://app.example.com/app.js' },
      response: { status: 200, headers: [], content: { mimeType: 'text/javascript' } }
    })
    file.log.entries.push({
      ...second,
      startedDateTime: '2026-11-24T10:01:00.000Z',
      response: { status: 0, statusText: '', headers: [], content: {}, _error: 'net::ERR_BLOCKED_BY_CLIENT' }
    })
    const report = diagnoseRecording('firefox.har', JSON.stringify(file))
    expect(report.findings).toEqual([])
    expect(report.ignored).toBe(1)
    expect(report.timeline.at(-1)).toMatchObject({ status: null, error: 'net::ERR_BLOCKED_BY_CLIENT' })
  })

  it('a file it cannot read is refused with the problem named', () => {
    const refusal = (text: string) => {
      try {
        diagnoseRecording('bad', text)
      } catch (error) {
        expect(error).toBeInstanceOf(RecordingInputError)
        return (error as Error).message
      }
      throw new Error('accepted')
    }
    expect(refusal('{"log": {"entries": [')).toMatch(/^the file is not JSON \(.*\): a HAR file/)
    expect(
      refusal(
        '{"log": {"entries": [{"startedDateTime": "2026-11-24T10:00:00Z", "request": {"method": "GET"}, "response": {"status": 200}}]}}'
      )
    ).toMatch(/^not a HAR 1\.2 file the doctor can read: log\.entries\[0\]\.request\.url: /)
    expect(refusal('{"log": {}}')).toMatch(/log\.entries: /)
    expect(refusal('[1, 2]')).toMatch(/^neither a HAR file .* nor a Syncscope recording/)
    expect(refusal('{"format": "syncscope-recording", "version": 1, "exchanges": [{"request": {}}]}')).toMatch(
      /^a damaged Syncscope recording: exchanges\[0\]\.request\.at: /
    )
  })
})
