import { describe, expect, it } from 'vitest'
import { diagnoseRecording } from '../../src/main/doctor/doctor'
import { redactRecording } from '../../src/main/doctor/redact'
import { toRecording } from '../../src/shared/doctor-recording'
import { ShapeRecorder } from '../../src/shared/shape-client/recorder'
import { entry, insert, shapeHeaders, upToDate } from './har-builder'

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
