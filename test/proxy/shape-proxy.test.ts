import { generateKeyPair, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  bearer,
  configFor,
  DENNIS,
  GRACE,
  LINUS,
  messages,
  rowsOf,
  SHAPES,
  startProxyStack,
  USERS,
  type ProxyStack
} from './support'
import { untilHeld } from '../support/shape-server'

const SECRET = 'upstream-secret-1'
let stack: ProxyStack
let proxyUrl: string

beforeAll(async () => {
  stack = await startProxyStack({
    secret: SECRET,
    longPollTimeout: 3000,
    sseKeepAlive: 300,
    config: {
      users: [...USERS, { id: 'sneaky', name: "x' OR 'a'='a", roles: ['member'] }],
      shapes: {
        ...SHAPES,
        'by-org': { table: 'issues', rowFilter: { where: 'project_id = $1', params: ['org_id'] } },
        'me-by-name': { table: 'users', columns: ['id', 'name'], rowFilter: { where: 'name = $1', params: ['name'] } }
      },
      cors: { origins: ['http://app.test'] }
    }
  })
  proxyUrl = stack.proxy.url
})
afterAll(() => stack?.close())

const ownedBy = async (owner: string) =>
  Number((await stack.shapes.pool.query('SELECT count(*) FROM issues WHERE owner_id = $1', [owner])).rows[0].count)

async function get(path: string, userId: string | null, headers: Record<string, string> = {}) {
  const auth = userId ? bearer(await stack.accessToken(userId)) : {}
  return fetch(`${proxyUrl}${path}`, { headers: { ...auth, ...headers } })
}

/** Follows the log from -1 until up-to-date; returns every row and where to continue. */
async function syncAll(userId: string) {
  let offset = '-1'
  let handle: string | null = null
  const rows: Array<Record<string, string | null>> = []
  for (let round = 0; round < 10; round++) {
    const response = await get(`/api/shapes/my-issues?offset=${offset}${handle ? `&handle=${handle}` : ''}`, userId)
    expect(response.status).toBe(200)
    rows.push(...rowsOf(await messages(response)))
    offset = response.headers.get('service-offset') as string
    handle = response.headers.get('service-handle')
    if (response.headers.has('service-up-to-date')) return { rows, offset, handle: handle as string }
  }
  throw new Error('never up to date')
}

describe('proxy auth: named shapes', () => {
  it('gives each caller only their rows and only the configured columns; admins get the whole table', async () => {
    const grace = await syncAll(GRACE)
    expect(grace.rows.length).toBe(await ownedBy(GRACE))
    expect(grace.rows.length).toBeGreaterThan(0)
    expect(grace.rows.every((row) => row.owner_id === GRACE)).toBe(true)
    expect(Object.keys(grace.rows[0] ?? {}).sort()).toEqual(['id', 'owner_id', 'priority', 'title'])
    const dennis = await syncAll(DENNIS)
    expect(dennis.rows.every((row) => row.owner_id === DENNIS)).toBe(true)
    const linus = await syncAll(LINUS)
    expect(linus.rows.length).toBe(3000)
  })

  it('quotes mixed-case identifiers upstream and binds claims as parameters, never as SQL text', async () => {
    const settings = rowsOf(await messages(await get('/api/shapes/my-settings?offset=-1', GRACE)))
    expect(settings).toEqual([{ userId: GRACE, pageSize: expect.any(String) }])
    const me = rowsOf(await messages(await get('/api/shapes/me-by-name?offset=-1', GRACE)))
    expect(me).toEqual([{ id: GRACE, name: 'Grace 1' }])
    const sneaky = await get('/api/shapes/me-by-name?offset=-1', 'sneaky')
    expect(sneaky.status).toBe(200)
    expect(rowsOf(await messages(sneaky))).toEqual([])
  })

  it('sets the secret upstream itself; the shape service refuses requests without it', async () => {
    expect((await fetch(`${stack.shapes.url}/v1/shape?table=issues&offset=-1`)).status).toBe(401)
    const response = await get('/api/shapes/my-issues?offset=-1', GRACE)
    expect(response.status).toBe(200)
    const exchange = stack.proxy.exchanges().at(-1)
    expect(exchange?.upstream?.url).toContain('secret=********')
    expect(exchange?.upstream?.url).not.toContain(SECRET)
    expect(exchange?.upstream?.serverParams).toEqual(['table', 'columns', 'where', 'params[1]', 'secret'])
  })

  it('refuses every spelling of a server-owned parameter, and never forwards it', async () => {
    const smuggled = [
      'table=users',
      'TABLE=users',
      'where=true',
      'Where=true',
      'columns=email',
      'params[1]=' + DENNIS,
      'params%5B1%5D=' + DENNIS,
      'params=%7B%221%22%3A%22x%22%7D',
      'secret=' + SECRET,
      'api_secret=x',
      'queryable_columns=email',
      'offset=-1&offset=0_0',
      'OFFSET=0_0',
      'subset[where]=true',
      'subset__foo=1'
    ]
    for (const query of smuggled) {
      const before = stack.proxy.exchanges().length
      const response = await get(
        `/api/shapes/my-issues?offset=-1&${query}`.replace('offset=-1&offset=-1', 'offset=-1'),
        GRACE
      )
      expect([query, response.status]).toEqual([query, 400])
      const body = (await response.json()) as { error: { code: string; message: string } }
      expect(body.error.message.length).toBeGreaterThan(0)
      expect(
        stack.proxy
          .exchanges()
          .slice(before)
          .every((exchange) => exchange.upstream === null)
      ).toBe(true)
    }
  })

  it('answers 401 for a missing, malformed, forged, expired, early or misaddressed token, without going upstream', async () => {
    const now = Math.floor(Date.now() / 1000)
    const base = {
      sub: GRACE,
      roles: ['member'],
      iss: 'syncscope-local',
      aud: 'syncscope-proxy',
      iat: now,
      exp: now + 60
    }
    const other = await generateKeyPair('ES256')
    const forged = await new SignJWT(base).setProtectedHeader({ alg: 'ES256' }).sign(other.privateKey)
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(base)).toString('base64url')}.`
    const valid = await stack.sign(base)
    const cases: Array<[string, Record<string, string>, string]> = [
      ['no credentials', {}, 'missing_credentials'],
      ['basic auth', { authorization: 'Basic Z3JhY2U6eA==' }, 'malformed_authorization'],
      ['two tokens', { authorization: `Bearer ${valid}, Bearer ${valid}` }, 'malformed_authorization'],
      ['garbage', bearer('not-a-token'), 'invalid_token'],
      ['alg none', bearer(unsigned), 'invalid_token'],
      ['wrong signature', bearer(forged), 'invalid_signature'],
      [
        'tampered payload',
        bearer(
          `${valid.split('.')[0]}.${Buffer.from(JSON.stringify({ ...base, sub: LINUS, roles: ['admin'] })).toString('base64url')}.${valid.split('.')[2]}`
        ),
        'invalid_signature'
      ],
      ['expired', bearer(await stack.sign({ ...base, exp: now - 120 })), 'token_expired'],
      ['future nbf', bearer(await stack.sign({ ...base, nbf: now + 600 })), 'token_not_yet_valid'],
      ['wrong issuer', bearer(await stack.sign({ ...base, iss: 'someone-else' })), 'untrusted_issuer'],
      ['wrong audience', bearer(await stack.sign({ ...base, aud: 'syncscope-proxy/shapes' })), 'invalid_token'],
      ['no subject', bearer(await stack.sign({ ...base, sub: undefined })), 'invalid_token']
    ]
    for (const [name, headers, code] of cases) {
      const before = stack.proxy.exchanges().length
      const response = await get('/api/shapes/my-issues?offset=-1', null, headers)
      const body = (await response.json()) as { error: { code: string } }
      expect([name, response.status, body.error.code]).toEqual([name, 401, code])
      expect(response.headers.get('vary')).toContain('Authorization')
      expect(
        stack.proxy
          .exchanges()
          .slice(before)
          .every((exchange) => exchange.upstream === null)
      ).toBe(true)
    }
  })

  it('answers 403 to callers without the role or without the claim a filter binds', async () => {
    const visitor = await get('/api/shapes/my-issues?offset=-1', 'visitor')
    expect(visitor.status).toBe(403)
    expect(((await visitor.json()) as { error: { code: string } }).error.code).toBe('forbidden_role')
    const noOrg = await get('/api/shapes/by-org?offset=-1', GRACE)
    expect(noOrg.status).toBe(403)
    expect(((await noOrg.json()) as { error: { code: string } }).error.code).toBe('missing_claim')
  })

  it('routes only the exact paths: variants under the proxy prefix are 404 and never reach upstream', async () => {
    const variants = [
      '/api/shapes/my-issues/',
      '/api//shapes/my-issues',
      '/api/shapes/my%2Dissues',
      '/api/shapes/%6Dy-issues',
      '/api/shapes/my-issues%2F',
      '/API/shapes/my-issues',
      '/proxy/v1/shape/',
      '/proxy/v1//shape',
      '/proxy/v1/%73hape',
      '/proxy//v1/shape',
      '//proxy/v1/shape',
      '/v1/shape'
    ]
    for (const path of variants) {
      const before = stack.proxy.exchanges().length
      const response = await get(`${path}?offset=-1`, GRACE)
      expect([path, response.status]).toEqual([path, 404])
      expect(
        stack.proxy
          .exchanges()
          .slice(before)
          .every((exchange) => exchange.upstream === null)
      ).toBe(true)
    }
  })

  it('varies on Authorization, drops stale encoding headers and upstream CORS, and exposes the protocol headers to allowed origins', async () => {
    const response = await get('/api/shapes/my-issues?offset=-1', GRACE, {
      'accept-encoding': 'gzip',
      origin: 'http://app.test'
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('vary')).toContain('Authorization')
    expect(response.headers.get('vary')).toContain('Origin')
    expect(response.headers.get('content-encoding')).toBeNull()
    expect(response.headers.get('content-length')).toBeNull()
    expect(response.headers.get('access-control-allow-origin')).toBe('http://app.test')
    expect(response.headers.get('access-control-expose-headers')?.split(',')).toEqual(
      expect.arrayContaining([
        'service-offset',
        'service-handle',
        'service-schema',
        'service-cursor',
        'service-up-to-date'
      ])
    )
    expect(response.headers.get('access-control-allow-methods')).toBeNull()
    const stranger = await get('/api/shapes/my-issues?offset=-1', GRACE, { origin: 'http://evil.test' })
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull()
    const preflight = await fetch(`${proxyUrl}/api/shapes/my-issues?offset=-1`, {
      method: 'OPTIONS',
      headers: { origin: 'http://app.test', 'access-control-request-headers': 'authorization' }
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://app.test')
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization')
    const strangerPreflight = await fetch(`${proxyUrl}/proxy/v1/shape`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.test' }
    })
    expect(strangerPreflight.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('passes conditional requests through: a matching If-None-Match gets a 304 that still varies on Authorization', async () => {
    const first = await get('/api/shapes/my-issues?offset=-1', GRACE)
    const etag = first.headers.get('etag') as string
    expect(etag).toBeTruthy()
    await first.arrayBuffer()
    const again = await get('/api/shapes/my-issues?offset=-1', GRACE, { 'if-none-match': etag })
    expect(again.status).toBe(304)
    expect(again.headers.get('vary')).toContain('Authorization')
    expect(await again.text()).toBe('')
  })

  it('passes a must-refetch through with the new handle', async () => {
    const response = await get('/api/shapes/my-issues?offset=0_0&handle=gone-1', GRACE)
    expect(response.status).toBe(409)
    expect(response.headers.get('service-handle')).toBeTruthy()
    expect(response.headers.get('vary')).toContain('Authorization')
    expect(await response.json()).toEqual([{ headers: { control: 'must-refetch' } }])
  })

  it('forwards a POST subset body unchanged; it can only narrow, never widen or redefine the shape', async () => {
    const { handle } = await syncAll(GRACE)
    const post = async (body: unknown) =>
      fetch(`${proxyUrl}/api/shapes/my-issues?offset=-1&handle=${handle}`, {
        method: 'POST',
        headers: { ...bearer(await stack.accessToken(GRACE)), 'content-type': 'application/json' },
        body: JSON.stringify(body)
      })
    const narrowed = await post({ where: 'id > 1000' })
    expect(narrowed.status).toBe(200)
    const data = ((await narrowed.json()) as { data: Array<{ value: Record<string, string> }> }).data.map(
      (message) => message.value
    )
    expect(data.length).toBeGreaterThan(0)
    expect(data.length).toBeLessThan(await ownedBy(GRACE))
    expect(data.every((row) => row.owner_id === GRACE && Number(row.id) > 1000)).toBe(true)
    const everything = await post({ where: 'true' })
    expect(((await everything.json()) as { data: unknown[] }).data.length).toBe(await ownedBy(GRACE))
    const breakOut = await post({ where: 'true) OR (true' })
    expect(breakOut.status).toBe(400)
    const probe = await post({ order_by: 'CAST((SELECT version()) AS int) DESC', limit: 1 })
    expect(probe.status).toBe(403)
    expect(((await probe.json()) as { error: { code: string } }).error.code).toBe('subquery_not_allowed')
    for (const body of [
      { table: 'users' },
      { where: 'true', columns: 'email' },
      { secret: SECRET },
      { subset: { where: 'true' } }
    ]) {
      const response = await post(body)
      expect([body, response.status]).toEqual([body, 400])
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('unsupported_body_key')
    }
  })

  it('streams a long-poll: a change for the caller arrives while the request is held', async () => {
    const { offset, handle } = await syncAll(GRACE)
    const token = await stack.accessToken(GRACE)
    const held = fetch(`${proxyUrl}/api/shapes/my-issues?offset=${offset}&handle=${handle}&live=true`, {
      headers: bearer(token)
    })
    await untilHeld(stack.shapes, handle, 1)
    await stack.shapes.pool.query(
      `INSERT INTO issues (id, project_id, owner_id, title) VALUES (90001, 1000000001, $1, 'live for grace')`,
      [GRACE]
    )
    const response = await held
    expect(response.status).toBe(200)
    const titles = rowsOf(await messages(response)).map((row) => row.title)
    expect(titles).toEqual(['live for grace'])
  })

  it('streams SSE without buffering: frames arrive while the response is still open', async () => {
    const { offset, handle } = await syncAll(DENNIS)
    const response = await fetch(
      `${proxyUrl}/api/shapes/my-issues?offset=${offset}&handle=${handle}&live=true&live_sse=true`,
      { headers: { ...bearer(await stack.accessToken(DENNIS)), accept: 'text/event-stream' } }
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(response.headers.get('x-accel-buffering')).toBe('no')
    expect(response.headers.get('vary')).toContain('Authorization')
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let received = ''
    const first = await reader.read()
    expect(first.done).toBe(false)
    received += decoder.decode(first.value)
    await stack.shapes.pool.query(
      `INSERT INTO issues (id, project_id, owner_id, title) VALUES (90002, 1000000001, $1, 'sse for dennis')`,
      [DENNIS]
    )
    while (!received.includes('sse for dennis')) {
      const next = await reader.read()
      expect(next.done).toBe(false)
      received += decoder.decode(next.value)
    }
    expect(received).toMatch(/^(: keep-alive|data: )/m)
    await reader.cancel()
  })

  it('reads the token from a cookie when configured, and then varies on Cookie too', async () => {
    const cookieProxy = await stack.startProxy(
      configFor(stack.shapes, { auth: { header: true, cookie: 'session' } }, SECRET)
    )
    const token = await stack.accessToken(GRACE)
    const response = await fetch(`${cookieProxy.url}/api/shapes/my-issues?offset=-1`, {
      headers: { cookie: `theme=dark; session=${token}` }
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('vary')).toContain('Authorization, Cookie')
    expect(rowsOf(await messages(response)).every((row) => row.owner_id === GRACE)).toBe(true)
    const refused = await fetch(`${cookieProxy.url}/api/shapes/my-issues?offset=-1`, {
      headers: { cookie: 'session=forged' }
    })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('vary')).toBe('Authorization, Cookie')
  })

  it('answers 502 naming the upstream when the shape service does not answer', async () => {
    const unreachable = await stack.startProxy(configFor(stack.shapes, { upstream: { url: 'http://127.0.0.1:9' } }))
    const response = await fetch(`${unreachable.url}/api/shapes/my-issues?offset=-1`, {
      headers: bearer(await stack.accessToken(GRACE))
    })
    expect(response.status).toBe(502)
    const body = (await response.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('upstream_unreachable')
    expect(body.error.message).toContain('http://127.0.0.1:9')
  })
})
