import { describe, expect, it } from 'vitest'
import { diagnoseRecording } from '../../src/main/doctor/doctor'
import { redactRecording } from '../../src/main/doctor/redact'
import { toRecording } from '../../src/shared/doctor-recording'
import { ShapeRecorder } from '../../src/shared/shape-client/recorder'
import { entry, insert, shapeHeaders, upToDate } from './har-builder'

const { toRecordingFile, sseText } = recordingHelpers()

const jwt = `eyJhbGciOiJIUzI1NiJ9.${Buffer.from('{"sub":"alice"}').toString('base64url')}.c2lnbmF0dXJlLXNpZ25hdHVyZQ`
const SECRETS = {
  param: 'shape-api-secret-0001',
  bearer: 'bearer-token-0002-abcdef',
  cookie: 'cookie-session-0003',
  csrf: 'csrf-token-value-0004',
  setCookie: 'set-cookie-sid-0005',
  password: 'correct horse battery 0006',
  jwt,
  apiKey: 'x-api-key-value-0008'
}

function secretHar(): string {
  const shape = entry({
    at: 0,
    params: { offset: '-1', secret: SECRETS.param },
    status: 200,
    headers: shapeHeaders('h1', '0_inf', {
      'electric-up-to-date': '',
      'set-cookie': `sid=${SECRETS.setCookie}; HttpOnly; Path=/`
    }),
    body: [insert(1), upToDate],
    requestHeaders: {
      authorization: `Bearer ${SECRETS.bearer}`,
      cookie: `session=${SECRETS.cookie}; csrftoken=${SECRETS.csrf}`,
      'x-api-key': SECRETS.apiKey,
      referer: `https://app.example.com/?secret=${SECRETS.param}`
    }
  })
  const live = entry({
    at: 100,
    params: { offset: '0_inf', handle: 'h1', live: 'true', secret: SECRETS.param },
    status: 200,
    headers: shapeHeaders('h1', '0_inf', { 'electric-cursor': '3', 'electric-up-to-date': '' }),
    body: [upToDate],
    wait: 20_000
  })
  const login = entry({
    at: 50,
    url: 'https://app.example.com/api/login',
    params: {},
    status: 200,
    body: { access_token: SECRETS.jwt, user: 'alice' }
  })
  Object.assign(login.request, {
    method: 'POST',
    postData: { mimeType: 'application/json', text: JSON.stringify({ user: 'alice', password: SECRETS.password }) },
    cookies: [{ name: 'session', value: SECRETS.cookie }]
  })
  return JSON.stringify({
    log: { version: '1.2', creator: { name: 'WebInspector', version: '537.36' }, entries: [shape, login, live] }
  })
}

describe('the redacted bundle', () => {
  it('keeps no token, cookie, password or secret of a HAR, and still diagnoses the same', () => {
    const original = secretHar()
    for (const secret of Object.values(SECRETS)) expect(original).toContain(JSON.stringify(secret).slice(1, -1))
    const redacted = redactRecording(original)
    for (const [name, secret] of Object.entries(SECRETS)) {
      expect(redacted, name).not.toContain(secret)
      expect(redacted, name).not.toContain(encodeURIComponent(secret))
    }
    expect(redacted).toContain('•••')
    const before = diagnoseRecording('a.har', original)
    const after = diagnoseRecording('a.har', redacted)
    expect(after.timeline.map(({ n, status, response }) => ({ n, status, response }))).toEqual(
      before.timeline.map(({ n, status, response }) => ({ n, status, response }))
    )
    expect(after.findings.map((finding) => finding.id)).toEqual(before.findings.map((finding) => finding.id))
    expect(after.ignored).toBe(1)
  })

  it('masks a Syncscope recording too: credential headers both ways and secret parameters', () => {
    const recorder = new ShapeRecorder()
    const id = recorder.request(
      'GET',
      `http://127.0.0.1:3000/v1/shape?table=issues&offset=-1&api_secret=${SECRETS.param}`,
      [['authorization', `Bearer ${SECRETS.bearer}`]],
      'off'
    )
    recorder.response(id, {
      status: 200,
      statusText: 'OK',
      headers: [
        ...Object.entries(shapeHeaders('h1', '0_inf', { 'electric-up-to-date': '' })),
        ['set-cookie', `sid=${SECRETS.setCookie}`]
      ]
    })
    recorder.body(id, JSON.stringify([insert(1), upToDate]), 10)
    const redacted = redactRecording(JSON.stringify(toRecording([recorder])))
    for (const secret of [SECRETS.param, SECRETS.bearer, SECRETS.setCookie]) expect(redacted).not.toContain(secret)
    expect(diagnoseRecording('r.json', redacted).timeline).toHaveLength(1)
  })
})

const jwtInBody = `eyJhbGciOiJIUzI1NiJ9.${Buffer.from('{"sub":"bob"}').toString('base64url')}.Ym9keS1zaWduYXR1cmUtMDAxMQ`
const HIDDEN = {
  base64Field: 'row-api-token-in-base64-0009',
  base64Jwt: jwtInBody,
  sseField: 'sse-password-hash-0010',
  frameField: 'frame-secret-key-0012',
  code: 'oauth-authorization-code-0013',
  state: 'oauth-state-value-0014',
  fragmentCode: 'fragment-code-0015',
  fragmentState: 'fragment-state-0016'
}

const row = (id: number, value: Record<string, string>) => ({
  key: `"public"."issues"/"${id}"`,
  value: { id: String(id), ...value },
  headers: { operation: 'insert' }
})

/** Bodies the browser stored base64-encoded, SSE bodies and the tap's frames, OAuth redirects: each carrying a secret. */
function hiddenSecretsHar(): string {
  const base64 = entry({
    at: 0,
    params: { offset: '-1' },
    status: 200,
    headers: shapeHeaders('h1', '0_0'),
    requestHeaders: { referer: `https://app.example.com/callback?code=${HIDDEN.code}&state=${HIDDEN.state}` }
  })
  base64.response.content = {
    size: 0,
    mimeType: 'application/json',
    text: Buffer.from(
      JSON.stringify([row(1, { api_token: HIDDEN.base64Field, note: HIDDEN.base64Jwt }), upToDate])
    ).toString('base64'),
    encoding: 'base64'
  } as typeof base64.response.content
  const sseBody = sseText([row(2, { password_hash: HIDDEN.sseField }), upToDate])
  const sse = entry({
    at: 100,
    params: { offset: '0_inf', handle: 'h1', live: 'true', live_sse: 'true' },
    status: 200,
    headers: shapeHeaders('h1', '0_inf', { 'electric-cursor': '3' }),
    text: sseBody
  })
  const tapped = entry({
    at: 200,
    params: { offset: '0_inf', handle: 'h1', live: 'true', live_sse: 'true', cursor: '3' },
    status: 200,
    headers: shapeHeaders('h1', '0_inf', { 'electric-cursor': '4' }),
    text: sseText([row(3, { secret_key: HIDDEN.frameField }), upToDate])
  })
  Object.assign(tapped, {
    _frames: [
      { atMs: 5, raw: `data: ${JSON.stringify(row(3, { secret_key: HIDDEN.frameField }))}` },
      { atMs: 6, raw: `data: ${JSON.stringify(upToDate)}` }
    ]
  })
  const authorize = entry({
    at: 20,
    url: 'https://auth.example.com/authorize',
    params: { state: HIDDEN.state, client_id: 'app' },
    status: 302,
    headers: { location: `https://app.example.com/callback?code=${HIDDEN.code}&state=${HIDDEN.state}` }
  })
  authorize.response.redirectURL = `https://app.example.com/callback?code=${HIDDEN.code}&state=${HIDDEN.state}`
  const callback = entry({
    at: 30,
    url: 'https://app.example.com/callback',
    params: { code: HIDDEN.code, state: HIDDEN.state },
    status: 200
  })
  const implicit = entry({
    at: 40,
    url: `https://app.example.com/after-login#code=${HIDDEN.fragmentCode}&state=${HIDDEN.fragmentState}`,
    params: {},
    status: 200
  })
  return JSON.stringify({
    log: {
      version: '1.2',
      creator: { name: 'WebInspector', version: '537.36' },
      pages: [{ id: 'page_1', title: `https://app.example.com/callback?code=${HIDDEN.code}&state=${HIDDEN.state}` }],
      entries: [base64, authorize, callback, implicit, sse, tapped]
    }
  })
}

/** Every text of the file with base64 bodies decoded: a secret must not hide in any form. */
function decodedTexts(file: string): string {
  const json = JSON.parse(file) as {
    log: { entries: Array<{ response: { content: { text?: string; encoding?: string } } }> }
  }
  return [
    file,
    ...json.log.entries.map(({ response: { content } }) =>
      content.encoding === 'base64' && content.text ? Buffer.from(content.text, 'base64').toString('utf8') : ''
    )
  ].join('\n')
}

describe('the redacted bundle, for secrets in less obvious places', () => {
  it('masks secrets in base64 bodies, SSE bodies, the tap’s frames and OAuth code/state in every URL', () => {
    const original = hiddenSecretsHar()
    for (const secret of Object.values(HIDDEN))
      expect(
        decodedTexts(original).includes(secret) || decodedTexts(original).includes(encodeURIComponent(secret))
      ).toBe(true)
    const redacted = redactRecording(original)
    const everything = decodedTexts(redacted)
    expect(
      Object.entries(HIDDEN)
        .filter(([, secret]) => everything.includes(secret))
        .map(([name]) => name)
    ).toEqual([])
    for (const [name, secret] of Object.entries(HIDDEN)) {
      expect(everything, name).not.toContain(secret)
      expect(everything, name).not.toContain(encodeURIComponent(secret))
    }
    const before = diagnoseRecording('a.har', original)
    const after = diagnoseRecording('a.har', redacted)
    expect(after.timeline.map(({ n, status, response }) => ({ n, status, response }))).toEqual(
      before.timeline.map(({ n, status, response }) => ({ n, status, response }))
    )
    expect(after.timeline.map((entry) => entry.response.changes)).toEqual([1, 1, 1])
    expect(after.findings.map((finding) => finding.id)).toEqual(before.findings.map((finding) => finding.id))
  })

  it('masks secrets in a Syncscope recording’s SSE bodies and frames', () => {
    const original = toRecordingFile(sseText([row(4, { password: HIDDEN.sseField }), upToDate]), [
      `data: ${JSON.stringify(row(4, { password: HIDDEN.sseField }))}`
    ])
    expect(original).toContain(HIDDEN.sseField)
    const redacted = redactRecording(original)
    expect(redacted).not.toContain(HIDDEN.sseField)
    expect(diagnoseRecording('r.json', redacted).timeline[0]?.response.changes).toBe(1)
  })
})

function recordingHelpers() {
  const sseText = (messages: unknown[]) => messages.map((message) => `data: ${JSON.stringify(message)}\n\n`).join('')
  const toRecordingFile = (body: string, frames: string[]) =>
    JSON.stringify({
      format: 'syncscope-recording',
      version: 1,
      exchanges: [
        {
          request: {
            at: 1_000,
            method: 'GET',
            url: 'http://127.0.0.1:3000/v1/shape?table=issues&offset=0_inf&handle=h1&live=true&live_sse=true',
            headers: []
          },
          response: {
            at: 1_010,
            status: 200,
            headers: [...Object.entries(shapeHeaders('h1', '0_inf')), ['content-type', 'text/event-stream']]
          },
          body: { at: 1_100, text: body, truncated: false },
          frames: frames.map((raw, index) => ({ at: 1_020 + index, raw }))
        }
      ]
    })
  return { sseText, toRecordingFile }
}
