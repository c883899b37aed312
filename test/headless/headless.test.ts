import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { EventBus } from '../../src/main/events'
import { startHeadlessServer, type HeadlessServer } from '../../src/main/headless/server'
import { createDispatcher, type Handlers } from '../../src/main/rpc/dispatcher'
import { RpcError } from '../../src/shared/contract/errors'

const TOKEN = 'test-token-0123456789'

function rawRequest(
  port: number,
  path: string,
  headers: Record<string, string>,
  body = '{}'
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }))
      }
    )
    req.on('error', reject)
    req.end(body)
  })
}

const statusOnly = {
  'db.status': async () => ({
    state: 'connected',
    kind: 'embedded',
    url: 'postgres://x',
    serverVersion: '18',
    walLevel: 'logical',
    dataDir: null,
    error: null
  })
} as unknown as Handlers

describe('headless HTTP contract without a UI', () => {
  it('serves no contract, so only public routes answer', async () => {
    const server = await startHeadlessServer({
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      dispatch: createDispatcher(statusOnly, () => undefined),
      events: new EventBus(),
      rendererDir: null,
      publicRoutes: [],
      log: () => undefined
    })
    const response = await rawRequest(server.port, '/rpc/db.status', {
      host: `127.0.0.1:${server.port}`,
      'x-syncscope-token': TOKEN
    })
    await server.close()
    expect(response.status).toBe(404)
  })
})

describe('headless HTTP contract with the UI', () => {
  let server: HeadlessServer
  const events = new EventBus()

  beforeAll(async () => {
    const handlers = {
      ...statusOnly,
      'db.query': async () => {
        throw new RpcError('nope', 'refused on purpose')
      },
      'db.tables': async () => {
        throw new Error('boom')
      }
    } as unknown as Handlers
    const dispatch = createDispatcher(handlers, () => undefined)
    server = await startHeadlessServer({
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      dispatch,
      events,
      rendererDir: __dirname,
      publicRoutes: [
        { prefix: '/v1/', handle: (_req, res) => void res.writeHead(200, { 'x-public': 'yes' }).end('public') }
      ],
      log: () => undefined
    })
  })
  afterAll(() => server.close())

  const ok = () => ({ host: `127.0.0.1:${server.port}`, 'x-syncscope-token': TOKEN })

  it('answers a call with the token', async () => {
    const response = await rawRequest(server.port, '/rpc/db.status', ok())
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body).result.state).toBe('connected')
  })

  it('accepts the token as a cookie or a bearer header, and localhost as Host', async () => {
    expect(
      (
        await rawRequest(server.port, '/rpc/db.status', {
          host: `localhost:${server.port}`,
          cookie: `a=b; syncscope_token=${TOKEN}`
        })
      ).status
    ).toBe(200)
    expect(
      (
        await rawRequest(server.port, '/rpc/db.status', {
          host: `127.0.0.1:${server.port}`,
          authorization: `Bearer ${TOKEN}`
        })
      ).status
    ).toBe(200)
  })

  it.each([
    ['a missing token', { 'x-syncscope-token': '' }, 401, 'missing_token'],
    ['a wrong token', { 'x-syncscope-token': 'wrong' }, 401, 'missing_token'],
    ['a foreign Host (DNS rebinding)', { host: 'evil.example:80' }, 403, 'foreign_host'],
    ['a foreign Host with the right port', { host: 'attacker.test:PORT' }, 403, 'foreign_host'],
    ['a foreign Origin (CSRF)', { origin: 'http://evil.example' }, 403, 'foreign_origin'],
    ['a loopback Origin on another port', { origin: 'http://127.0.0.1:1' }, 403, 'foreign_origin']
  ])('refuses %s', async (_name, override, status, code) => {
    const headers = Object.fromEntries(
      Object.entries({ ...ok(), ...override }).map(([k, v]) => [k, v.replace('PORT', String(server.port))])
    )
    const response = await rawRequest(server.port, '/rpc/db.status', headers)
    expect(response.status).toBe(status)
    expect(JSON.parse(response.body).error.code).toBe(code)
  })

  it('names the problem for unknown calls, bad JSON, bad input and handler errors, without leaking internals', async () => {
    const unknown = await rawRequest(server.port, '/rpc/nope.nothing', ok())
    expect([unknown.status, JSON.parse(unknown.body).error.code]).toEqual([404, 'unknown_call'])
    const badJson = await rawRequest(server.port, '/rpc/db.query', ok(), '{not json')
    expect([badJson.status, JSON.parse(badJson.body).error.message]).toEqual([400, 'request body is not valid JSON'])
    const badInput = await rawRequest(server.port, '/rpc/db.query', ok(), JSON.stringify({ sql: 42 }))
    expect(badInput.status).toBe(400)
    expect(JSON.parse(badInput.body).error).toMatchObject({ code: 'invalid_input', issues: [{ path: ['sql'] }] })
    const refused = await rawRequest(server.port, '/rpc/db.query', ok(), JSON.stringify({ sql: 'select 1' }))
    expect([refused.status, JSON.parse(refused.body).error]).toEqual([
      400,
      { code: 'nope', message: 'refused on purpose' }
    ])
    const crashed = await rawRequest(server.port, '/rpc/db.tables', ok())
    expect([crashed.status, JSON.parse(crashed.body).error.code]).toEqual([500, 'internal_error'])
  })

  it('sets the token cookie from the printed URL and redirects to the app', async () => {
    const response = await fetch(`${server.url}/?token=${TOKEN}`, { redirect: 'manual' })
    expect(response.status).toBe(303)
    expect(response.headers.get('set-cookie')).toMatch(
      /^syncscope_token=test-token-0123456789; HttpOnly; SameSite=Strict/
    )
  })

  it.each(['attacker-chosen', '', `${TOKEN}x`, TOKEN.slice(0, -1), '%E0%A4%A'])(
    'sets no cookie from a link carrying another token (%s)',
    async (token) => {
      const response = await fetch(`${server.url}/?token=${token}`, { redirect: 'manual' })
      expect(response.headers.get('set-cookie')).toBeNull()
      expect(response.status).toBe(401)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_token')
    }
  )

  it.each(['/v1/shape', '/v1//shape', '/%76%31/shape'])(
    'routes the public path %s (also spelled with doubled slashes or escapes) without a token',
    async (path) => {
      const response = await fetch(`${server.url}${path}`)
      expect([response.status, response.headers.get('x-public')]).toEqual([200, 'yes'])
    }
  )

  it('streams events to subscribers over SSE', async () => {
    const controller = new AbortController()
    const response = await fetch(`${server.url}/events`, {
      headers: { 'x-syncscope-token': TOKEN },
      signal: controller.signal
    })
    const reader = response.body!.getReader()
    await reader.read()
    events.emit('db.changed', { reason: 'statement' })
    const { value } = await reader.read()
    const frame = new TextDecoder().decode(value)
    expect(z.string().parse(frame)).toBe('data: {"name":"db.changed","payload":{"reason":"statement"}}\n\n')
    controller.abort()
  })
})
