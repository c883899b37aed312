import { request } from 'node:http'
import { ShapeStream, Shape } from '@electric-sql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

interface RawAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** A request with any Host and Origin (fetch would not let a test set Host). */
function raw(
  server: TestShapeServer,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string
): Promise<RawAnswer> {
  const port = new URL(server.url).port
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, headers: { host: `127.0.0.1:${port}`, ...headers } },
      (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
      }
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** Whether the table was altered for replication (REPLICA IDENTITY FULL or put into a publication). */
async function touched(server: TestShapeServer, table: string): Promise<boolean> {
  const { rows } = await server.pool.query<{ relreplident: string; published: number }>(
    `SELECT c.relreplident, (SELECT count(*)::int FROM pg_publication_tables p WHERE p.tablename = c.relname) AS published
       FROM pg_class c WHERE c.relname = $1 AND c.relnamespace = 'public'::regnamespace`,
    [table]
  )
  return rows[0]?.relreplident === 'f' || (rows[0]?.published ?? 0) > 0
}

describe('the shape API with default options: a browser page of another site gets nothing', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: 'electric' })
  })
  afterAll(async () => server?.close())

  it('refuses a GET from a foreign Origin with 403 and no CORS headers, before touching the table', async () => {
    const answer = await raw(server, '/v1/shape?table=comments&offset=-1', { origin: 'http://evil.test' })
    expect(answer.status).toBe(403)
    expect(answer.headers['access-control-allow-origin']).toBeUndefined()
    expect(JSON.parse(answer.body).message).toMatch(/Origin 'http:\/\/evil\.test'/)
    expect(await touched(server, 'comments')).toBe(false)
    expect(server.app.rooms.shapes.service()?.shapeByHandle).toBeDefined()
  })

  it.each([
    ['a simple POST (text/plain)', 'POST', { 'content-type': 'text/plain' }, '{"where":"true"}'],
    ['a DELETE', 'DELETE', {}, undefined],
    ['a HEAD', 'HEAD', {}, undefined]
  ])('refuses %s from a foreign Origin', async (_name, method, headers, body) => {
    const answer = await raw(
      server,
      '/v1/shape?table=comments&offset=-1',
      { origin: 'http://evil.test', ...headers },
      method,
      body
    )
    expect(answer.status).toBe(403)
    expect(answer.headers['access-control-allow-origin']).toBeUndefined()
    expect(await touched(server, 'comments')).toBe(false)
  })

  it.each([
    'http://evil.test',
    'null',
    'http://localhost.evil.test:5173',
    'http://127.0.0.1.evil.test',
    'http://evil.test:5173',
    'file://'
  ])('gives no CORS to a preflight from %s', async (origin) => {
    const answer = await raw(server, '/v1/shape', { origin, 'access-control-request-method': 'DELETE' }, 'OPTIONS')
    expect(answer.status).toBe(403)
    expect(answer.headers['access-control-allow-origin']).toBeUndefined()
    expect(answer.headers['access-control-allow-methods']).toBeUndefined()
  })

  it.each([
    'evil.test',
    'evil.test:PORT',
    'localhost.evil.test:PORT',
    '127.0.0.1.nip.io:PORT',
    '192.168.1.20:PORT',
    '[::2]:PORT'
  ])('refuses Host %s (DNS rebinding) with 403', async (host) => {
    const answer = await raw(server, '/v1/shape?table=comments&offset=-1', {
      host: host.replace('PORT', new URL(server.url).port)
    })
    expect(answer.status).toBe(403)
    expect(JSON.parse(answer.body).message).toMatch(/Host/)
    expect(answer.headers['access-control-allow-origin']).toBeUndefined()
    expect(await touched(server, 'comments')).toBe(false)
  })

  it('refuses a cross-site request that carries no Origin (an image, a script, a link)', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const answer = await raw(server, '/v1/shape?table=comments&offset=-1', {
        'sec-fetch-site': site,
        'sec-fetch-mode': 'no-cors'
      })
      expect(answer.status, site).toBe(403)
    }
    expect(await touched(server, 'comments')).toBe(false)
  })

  it.each([
    'http://localhost:5173',
    'http://127.0.0.1:8080',
    'http://[::1]:3000',
    'http://localhost',
    'https://localhost:5173'
  ])('serves a page on loopback (%s) with CORS', async (origin) => {
    const answer = await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', { origin })
    expect(answer.status).toBe(200)
    expect(answer.headers['access-control-allow-origin']).toBe(origin)
    const preflight = await raw(server, '/v1/shape', { origin, 'access-control-request-method': 'DELETE' }, 'OPTIONS')
    expect(preflight.status).toBe(204)
    expect(preflight.headers['access-control-allow-origin']).toBe(origin)
    expect(preflight.headers['access-control-allow-methods']).toContain('DELETE')
  })

  it.each(['localhost', 'localhost:PORT', '127.0.0.1', '127.0.0.1:PORT', '[::1]:PORT', 'LOCALHOST:PORT'])(
    'accepts Host %s',
    async (host) => {
      const answer = await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', {
        host: host.replace('PORT', new URL(server.url).port)
      })
      expect(answer.status).toBe(200)
    }
  )

  it("serves the app's own window (a file:// page, Origin null) only when the shell adds this run's token", async () => {
    const path = '/v1/shape?table=issues&offset=-1&where=id%3D1'
    const token = server.app.appToken
    const refused = [
      await raw(server, path, { origin: 'null' }),
      await raw(server, path, { origin: 'null', 'x-syncscope-token': 'not-the-token' }),
      await raw(server, path, { origin: 'null', cookie: `syncscope_token=${token}` })
    ]
    expect(refused.map((answer) => answer.status)).toEqual([403, 403, 403])
    const served = await raw(server, path, { origin: 'null', 'x-syncscope-token': token })
    expect([served.status, served.headers['access-control-allow-origin']]).toEqual([200, 'null'])
    const preflight = await raw(
      server,
      '/v1/shape',
      { origin: 'null', 'access-control-request-method': 'DELETE', 'x-syncscope-token': token },
      'OPTIONS'
    )
    expect([preflight.status, preflight.headers['access-control-allow-origin']]).toEqual([204, 'null'])
    expect(await touched(server, 'comments')).toBe(false)
  })

  it('serves the official client running on a dev server at http://localhost:5173', async () => {
    const controller = new AbortController()
    const origins: string[] = []
    const stream = new ShapeStream({
      url: `${server.url}/v1/shape`,
      params: { table: 'issues', where: 'priority = 1' },
      signal: controller.signal,
      fetchClient: async (input, init) => {
        const headers = new Headers(init?.headers)
        headers.set('origin', 'http://localhost:5173')
        const response = await fetch(input, { ...init, headers })
        origins.push(String(response.headers.get('access-control-allow-origin')))
        return response
      }
    })
    try {
      const rows = await new Shape(stream).rows
      expect(rows.length).toBeGreaterThan(0)
      expect(origins[0]).toBe('http://localhost:5173')
    } finally {
      controller.abort()
    }
  })
})

describe('the shape API opened to more origins and hosts', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ corsOrigins: ['http://192.168.1.20:5173'], allowedHosts: ['devbox.local'] })
  })
  afterAll(async () => server?.close())

  it('allows an origin given with --cors-origin, and still refuses others', async () => {
    const allowed = await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', {
      origin: 'http://192.168.1.20:5173'
    })
    expect([allowed.status, allowed.headers['access-control-allow-origin']]).toEqual([200, 'http://192.168.1.20:5173'])
    const other = await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', {
      origin: 'http://192.168.1.21:5173'
    })
    expect(other.status).toBe(403)
  })

  it('accepts a Host given with --allowed-host', async () => {
    expect(
      (
        await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', {
          host: `devbox.local:${new URL(server.url).port}`
        })
      ).status
    ).toBe(200)
    expect((await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', { host: 'evil.test' })).status).toBe(403)
  })
})

describe('--cors-origin *', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ corsOrigins: ['*'] })
  })
  afterAll(async () => server?.close())

  it('opens CORS to every origin, but still checks Host', async () => {
    const answer = await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', {
      origin: 'http://anywhere.test'
    })
    expect([answer.status, answer.headers['access-control-allow-origin']]).toEqual([200, 'http://anywhere.test'])
    expect((await raw(server, '/v1/shape?table=issues&offset=-1&where=id%3D1', { host: 'evil.test' })).status).toBe(403)
  })
})
