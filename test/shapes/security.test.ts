import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const SECRET = 's3cret-value'

describe('the API secret', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ secret: SECRET })
  })
  afterAll(async () => server?.close())

  const raw = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, init)

  it('refuses a request without the secret or with a wrong one, with 401 and no CORS (even to a page allowed to call)', async () => {
    for (const query of [
      '',
      '&secret=wrong',
      '&api_secret=wrong',
      `&secret=wrong&api_secret=${SECRET}`,
      `&secret=${SECRET}x`
    ]) {
      const response = await raw(`/v1/shape?table=issues&offset=-1${query}`, {
        headers: { origin: 'http://localhost:5173' }
      })
      expect(response.status, query).toBe(401)
      expect(await response.json()).toEqual({ message: 'Unauthorized - Invalid API secret' })
      expect(response.headers.get('access-control-allow-origin')).toBeNull()
    }
  })

  it('accepts `secret` and its alias `api_secret`', async () => {
    expect((await raw(`/v1/shape?table=issues&offset=-1&where=id=1&secret=${SECRET}`)).status).toBe(200)
    expect((await raw(`/v1/shape?table=issues&offset=-1&where=id=1&api_secret=${SECRET}`)).status).toBe(200)
  })

  it.each(['/v1/shape/', '/v1//shape', '/v1/shape//', '/v1/%73hape', '//v1/shape', '/v1/%2Fshape'])(
    'guards %s like /v1/shape',
    async (path) => {
      const response = await raw(`${path}?table=issues&offset=-1`)
      expect(response.status).toBe(401)
      expect((await raw(`${path}?table=issues&offset=-1&where=id=1&secret=${SECRET}`)).status).toBe(200)
    }
  )

  it('guards POST and DELETE too, but not health or preflight', async () => {
    expect(
      (
        await raw('/v1/shape?table=issues&offset=-1', {
          method: 'POST',
          body: '{}',
          headers: { 'content-type': 'application/json' }
        })
      ).status
    ).toBe(401)
    expect((await raw('/v1/shape?table=issues', { method: 'DELETE' })).status).toBe(401)
    expect((await raw('/v1/health')).status).toBe(200)
    expect((await raw('/v1/shape', { method: 'OPTIONS' })).status).toBe(204)
  })

  it('keeps internal details out of error bodies', async () => {
    const response = await raw(
      `/v1/shape?table=issues&offset=-1&where=${encodeURIComponent("id = 'x'")}&secret=${SECRET}`
    )
    expect(response.status).toBe(400)
    const text = await response.text()
    expect(text).not.toContain(SECRET)
    expect(text).not.toMatch(/SELECT|at .*\.ts/)
  })

  it('answers an internal failure with a bare 500: no SQL, stack or secret', async () => {
    const shapes = server.app.rooms.shapes.service()
    expect(shapes).not.toBeNull()
    await shapes?.pool.end()
    const response = await raw(`/v1/shape?table=comments&offset=-1&secret=${SECRET}`)
    expect(response.status).toBe(500)
    expect(await response.json()).toEqual({ error: 'Internal server error' })
    expect(response.headers.get('cache-control')).toBe('no-store')
  })
})
