import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventBus } from '../../src/main/events'
import { startHeadlessServer } from '../../src/main/headless/server'
import { get } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

let server: TestShapeServer

beforeAll(async () => {
  server = await startTestShapeServer({ chunkBytes: 2_000 })
  await server.pool.query('CREATE TABLE notes (id int PRIMARY KEY, title text NOT NULL, n int NOT NULL)')
  await server.pool.query(
    `INSERT INTO notes SELECT g, CASE WHEN g = 150 THEN 'one fifty' ELSE g::text END, g % 3 FROM generate_series(1, 300) g`
  )
})

afterAll(async () => {
  await server.close()
})

/** A request with its target sent as written (fetch would re-encode a malformed escape). */
function raw(path: string, method = 'GET'): Promise<{ status: number; body: string; type: string }> {
  const { hostname, port } = new URL(server.url)
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => (body += chunk.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type']) }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('a where that fails inside Postgres is the caller’s error', () => {
  it.each([
    ['1/0 = 1', 'division by zero'],
    ['title::int = 1', 'invalid input syntax for type integer']
  ])('%s: 400 naming the problem, at -1 and again, never 5xx', async (where, problem) => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await get(server.url, { table: 'notes', where, offset: '-1' })
      expect(response.status, response.text).toBe(400)
      expect(response.header('cache-control')).toBe('no-store')
      expect(JSON.stringify(response.body)).toContain(problem)
      expect(response.body).toMatchObject({
        message: 'Invalid request',
        errors: { where: [expect.stringContaining(problem)] }
      })
    }
  })

  it('also when the failing row comes after the first chunk: the next chunk request gets the 400', async () => {
    const first = await get(server.url, { table: 'notes', where: '10 / (id - 150) > 0', offset: '-1' })
    const handle = first.header('@handle') ?? ''
    let response = first
    for (
      let offset = first.header('@offset') ?? '';
      response.status === 200 && offset !== '';
      offset = response.header('@offset') ?? ''
    ) {
      response = await get(server.url, { table: 'notes', where: '10 / (id - 150) > 0', offset, handle })
    }
    // the failure reached the shape before this request did: it was dropped, so the client refetches first
    if (response.status === 409)
      response = await get(server.url, { table: 'notes', where: '10 / (id - 150) > 0', offset: '-1' })
    expect(response.status, response.text).toBe(400)
    expect(response.text).toContain('division by zero')
  })
})

describe('requests for what cannot be a shape get a 4xx with a JSON message', () => {
  it.each(['pg_catalog.pg_class', 'pg_catalog.pg_authid', 'information_schema.tables'])('table=%s', async (table) => {
    const response = await get(server.url, { table, offset: '-1' })
    expect(response.status, response.text).toBe(400)
    expect(response.body).toMatchObject({
      message: 'Invalid request',
      errors: { table: [expect.stringContaining(table.split('.')[0] as string)] }
    })
  })

  it('a table logical replication cannot follow (unlogged)', async () => {
    await server.pool.query('CREATE UNLOGGED TABLE scratch (id int PRIMARY KEY)')
    const response = await get(server.url, { table: 'scratch', offset: '-1' })
    expect(response.status, response.text).toBe(400)
    expect(response.body).toMatchObject({
      message: 'Invalid request',
      errors: { table: [expect.stringContaining('scratch')] }
    })
  })

  it('a subset where of 8,000+ terms', async () => {
    const shape = await get(server.url, { table: 'notes', offset: '-1' })
    expect(shape.status).toBe(200)
    const forms = [
      (terms: number) => Array.from({ length: terms }, (_, i) => `id = ${i}`).join(' OR '),
      (terms: number) => Array.from({ length: terms }, (_, i) => `id <> ${i}`).join(' AND '),
      (terms: number) => `id IN (${Array.from({ length: terms }, (_, i) => i).join(',')})`,
      (terms: number) => Array.from({ length: terms }, (_, i) => `(id = ${i}`).join(' OR ') + ')'.repeat(terms),
      (terms: number) => `${'NOT '.repeat(terms)}id = 1`,
      (terms: number) => `id = ${Array.from({ length: terms }, () => '1').join(' + ')}`
    ]
    for (const [terms, form] of [8_000, 20_000].flatMap((terms) => forms.map((form) => [terms, form] as const))) {
      const where = form(terms)
      const response = await fetch(new URL('/v1/shape?table=notes&offset=-1', server.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ where, order_by: 'id', limit: 10 })
      })
      const text = await response.text()
      expect(response.status, text).toBeLessThan(500)
      expect(response.status === 200 || response.status === 400, text).toBe(true)
      expect(() => JSON.parse(text)).not.toThrow()
    }
  })

  it.each([
    '/v1/shape?table=%zz&offset=-1',
    '/v1/shape?table=notes&where=id%3D%zz&offset=-1',
    '/v1/sh%ape?table=notes&offset=-1',
    '/%E0%A4%A'
  ])('a malformed escape: %s', async (path) => {
    const response = await raw(path)
    expect(response.status, response.body).toBeGreaterThanOrEqual(400)
    expect(response.status, response.body).toBeLessThan(500)
    expect(response.type).toContain('application/json')
    expect(() => JSON.parse(response.body)).not.toThrow()
  })
})

describe('a malformed escape under the UI', () => {
  it('is a 400 with a JSON message, not a 500', async () => {
    const ui = await mkdtemp(join(tmpdir(), 'syncscope-ui-'))
    await writeFile(join(ui, 'index.html'), '<!doctype html>')
    const token = 'request-errors-token'
    const headless = await startHeadlessServer({
      host: '127.0.0.1',
      port: 0,
      token,
      dispatch: async () => ({ ok: true, value: null }),
      events: new EventBus(),
      rendererDir: ui,
      publicRoutes: [],
      log: () => undefined
    })
    try {
      for (const path of ['/%E0%A4%A', '/assets/%zz.js', '/%']) {
        const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = request(
            { host: '127.0.0.1', port: headless.port, path, headers: { 'x-syncscope-token': token } },
            (res) => {
              let body = ''
              res.on('data', (chunk: Buffer) => (body += chunk.toString()))
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
            }
          )
          req.on('error', reject)
          req.end()
        })
        expect(response.status, path).toBe(400)
        expect(JSON.parse(response.body)).toMatchObject({ error: { message: expect.stringContaining('malformed') } })
      }
    } finally {
      await headless.close()
      await rm(ui, { recursive: true, force: true })
    }
  })
})
