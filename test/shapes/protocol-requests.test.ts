import { describe, expect, it } from 'vitest'
import { describeEachBrand } from '../support/branded-shape-api'
import { changes, syncToEnd } from '../support/shape-http'

describeEachBrand((api) => {
  const { brand, fetchShape } = api

  describe('bad input', () => {
    const cases: Array<[string, Record<string, string>, string, RegExp]> = [
      ['a missing offset', { table: 'issues' }, 'offset', /can't be blank/],
      ['a malformed offset', { table: 'issues', offset: '10' }, 'offset', /has invalid format/],
      ['a negative op', { table: 'issues', offset: '0_-1' }, 'offset', /has invalid format/],
      ['a continuation without handle', { table: 'issues', offset: '0_0' }, 'handle', /can't be blank/],
      ['live at -1', { table: 'issues', offset: '-1', live: 'true' }, 'live', /offset == -1/],
      [
        'live_sse without live',
        { table: 'issues', offset: '0_0', handle: 'h', live_sse: 'true' },
        'live_sse',
        /unless live/
      ],
      ['an unknown table', { table: 'nope', offset: '-1' }, 'table', /does not exist/],
      ['a bad identifier', { table: 'foo@bar', offset: '-1' }, 'table', /special characters/],
      ['a missing table', { offset: '-1' }, 'table', /can't be blank/],
      [
        'columns without the primary key',
        { table: 'issues', columns: 'title', offset: '-1' },
        'columns',
        /must include all primary key columns, missing: id/
      ],
      [
        'an unknown column',
        { table: 'issues', columns: 'id,nope', offset: '-1' },
        'columns',
        /not found on the table: nope/
      ],
      ['an unknown replica', { table: 'issues', replica: 'partial', offset: '-1' }, 'replica', /is invalid/],
      ['an unknown log mode', { table: 'issues', log: 'some', offset: '-1' }, 'log', /is invalid/],
      [
        'a where that escapes its parentheses',
        { table: 'issues', where: '1=1) OR (1=1', offset: '-1' },
        'where',
        /syntax error/
      ],
      ['a stacked statement', { table: 'issues', where: 'id=1; drop table issues', offset: '-1' }, 'where', /;/],
      [
        'an EXISTS subquery (only IN (SELECT …) is supported)',
        { table: 'issues', where: 'EXISTS (SELECT 1 FROM issues)', offset: '-1' },
        'where',
        /only `value IN \(SELECT/
      ],
      [
        'a subquery into a table that does not exist',
        { table: 'issues', where: 'owner_id IN (SELECT id FROM nope)', offset: '-1' },
        'where',
        /nope/
      ],
      ['a missing params[n]', { table: 'issues', where: 'id = $1', offset: '-1' }, 'where', /\$1/],
      [
        'non-sequential params',
        { table: 'issues', where: 'id = $1', 'params[2]': '1', offset: '-1' },
        'params',
        /sequentially/
      ],
      ['an unknown column in where', { table: 'issues', where: 'secret = 1', offset: '-1' }, 'where', /secret/],
      ['a non-boolean where', { table: 'issues', where: 'id + 1', offset: '-1' }, 'where', /boolean/]
    ]
    it.each(cases)('rejects %s with 400 naming the parameter', async (_label, params, field, message) => {
      const response = await fetchShape(params)
      expect(response.status).toBe(400)
      expect(response.header('cache-control')).toBe('no-store')
      const body = response.body as { message: string; errors: Record<string, string[]> }
      expect(body.message).toBe('Invalid request')
      expect(Object.keys(body.errors)).toEqual([field])
      expect(body.errors[field]?.join(' ')).toMatch(message)
    })

    it('counts where error positions as the reference does', async () => {
      const syntax = await fetchShape({ table: 'issues', where: '1 x 1', offset: '-1' })
      expect((syntax.body as { errors: { where: string[] } }).errors.where).toEqual([
        'At location 17: syntax error at or near "x"'
      ])
      const semantic = await fetchShape({ table: 'issues', where: 'id = 1 AND nope = 2', offset: '-1' })
      expect((semantic.body as { errors: { where: string[] } }).errors.where[0]).toMatch(/^At location 11: .*nope/)
    })

    it('binds params as values, never as SQL', async () => {
      const response = await fetchShape({
        table: 'issues',
        where: 'title = $1',
        'params[1]': "x' OR '1'='1",
        offset: '-1'
      })
      expect(response.status).toBe(200)
      expect(changes(response)).toEqual([])
      const typed = await fetchShape({ table: 'issues', where: 'id = $1', 'params[1]': '1 OR 1=1', offset: '-1' })
      expect(typed.status).toBe(400)
      expect((typed.body as { errors: Record<string, string[]> }).errors.where?.[0]).toMatch(/params\[1\].*integer/)
    })

    it('answers an offset beyond the log with 400 after waiting', async () => {
      const synced = await syncToEnd(api.server.url, { table: 'projects', where: 'id = 1000000001' }, brand)
      const response = await fetchShape({
        table: 'projects',
        where: 'id = 1000000001',
        handle: synced.handle,
        offset: '999999999999_0'
      })
      expect(response.status).toBe(400)
      expect(response.body).toEqual({
        message: 'Invalid request',
        errors: { offset: ['out of bounds for this shape'] }
      })
    })
  })

  describe('endpoints', () => {
    it('serves health, CORS preflight, and JSON 404s', async () => {
      const health = await fetch(new URL('/v1/health', api.server.url))
      expect(health.status).toBe(200)
      expect(await health.json()).toEqual({ status: 'active' })
      const preflight = await fetch(new URL('/v1/shape', api.server.url), {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:5173', 'access-control-request-headers': 'if-none-match, x-evil' }
      })
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
      expect(preflight.headers.get('access-control-allow-headers')).toBe('if-none-match')
      expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, POST, HEAD, DELETE, OPTIONS')
      const missing = await fetch(new URL('/v1/nothing', api.server.url))
      expect(missing.status).toBe(404)
      expect(await missing.json()).toEqual({ message: 'Not found' })
    })

    it('exposes every protocol header to browsers', async () => {
      const response = await fetchShape(
        { table: 'projects', offset: '-1' },
        { headers: { origin: 'http://127.0.0.1:5173' } }
      )
      expect(response.header('access-control-allow-origin')).toBe('http://127.0.0.1:5173')
      expect(response.header('access-control-expose-headers')).toBe(
        `${brand}-cursor,${brand}-handle,${brand}-has-data,${brand}-offset,${brand}-schema,${brand}-up-to-date,${brand}-internal-known-error,retry-after`
      )
      expect(response.header('vary')).toBe('Origin')
    })
  })
})
