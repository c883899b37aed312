import { describe, expect, it } from 'vitest'
import { describeEachBrand, LONG_POLL_MS } from '../support/branded-shape-api'
import { startTestShapeServer } from '../support/shape-server'
import { changes, controls, messages, syncToEnd } from '../support/shape-http'

describeEachBrand((api) => {
  const { brand, fetchShape, sql } = api

  describe('initial sync', () => {
    it('serves the snapshot at -1 (cached long, no up-to-date), then up-to-date at 0_0', async () => {
      const first = await fetchShape({ table: 'issues', where: 'id <= 3', offset: '-1' })
      expect(first.status).toBe(200)
      expect(first.header('@offset')).toBe('0_0')
      expect(first.header('@handle')).toMatch(/^\d+-\d+$/)
      expect(first.header('cache-control')).toBe(
        'public, max-age=604800, s-maxage=3600, stale-while-revalidate=2629746'
      )
      expect(first.header('etag')).toBe(`"${first.header('@handle')}:-1:0_0"`)
      expect(first.header('@up-to-date')).toBeNull()
      expect(first.header('content-type')).toBe('application/json; charset=utf-8')
      const rows = changes(first)
      expect(rows.map((row) => row.key)).toEqual([
        '"public"."issues"/"1"',
        '"public"."issues"/"2"',
        '"public"."issues"/"3"'
      ])
      expect(rows[0]?.headers).toEqual({ operation: 'insert', relation: ['public', 'issues'] })
      expect(controls(first)).toEqual(['snapshot-end'])
      const schema = JSON.parse(first.header('@schema') ?? '{}') as Record<string, Record<string, unknown>>
      expect(schema.id).toEqual({ type: 'int4', pk_index: 0, not_null: true })
      expect(schema.title).toEqual({ type: 'varchar', not_null: true, max_length: 200 })
      expect(schema.labels).toEqual({ type: 'text', dims: 1, not_null: true })
      expect(schema.estimate).toEqual({ type: 'numeric', precision: 6, scale: 1 })

      const second = await fetchShape({
        table: 'issues',
        where: 'id <= 3',
        offset: '0_0',
        handle: first.header('@handle') ?? ''
      })
      expect(second.status).toBe(200)
      expect(second.header('@offset')).toBe('0_inf')
      expect(second.header('@up-to-date')).toBe('')
      expect(second.header('@has-data')).toBe('true')
      expect(second.header('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300')
      const [upToDate] = messages(second)
      expect(upToDate?.headers.control).toBe('up-to-date')
      expect(upToDate?.headers.global_last_seen_lsn).toMatch(/^\d+$/)
    })

    it('gives one handle per canonical definition, whatever the spelling and column order', async () => {
      const a = await fetchShape({ table: 'issues', columns: 'id,title', where: 'priority = 1', offset: '-1' })
      const b = await fetchShape({ table: 'public.ISSUES', columns: '"title","id"', where: 'priority=1', offset: '-1' })
      const c = await fetchShape({
        table: '"public"."issues"',
        columns: 'title, id',
        where: '(priority = $1)',
        'params[1]': '1',
        offset: '-1'
      })
      expect(b.header('@handle')).toBe(a.header('@handle'))
      expect(c.header('@handle')).toBe(a.header('@handle'))
      const full = await fetchShape({
        table: 'issues',
        columns: 'id,title',
        where: 'priority = 1',
        replica: 'full',
        offset: '-1'
      })
      const changesOnly = await fetchShape({
        table: 'issues',
        columns: 'id,title',
        where: 'priority = 1',
        log: 'changes_only',
        offset: '-1'
      })
      expect(new Set([a.header('@handle'), full.header('@handle'), changesOnly.header('@handle')]).size).toBe(3)
      expect(changes(a).every((row) => Object.keys(row.value ?? {}).join() === 'id,title')).toBe(true)
    })

    it('chains a large snapshot over several requests by the offset header', async () => {
      const small = await startTestShapeServer({ headerBrand: brand, chunkBytes: 4000, longPollTimeout: LONG_POLL_MS })
      try {
        const result = await syncToEnd(small.url, { table: 'issues', where: 'id <= 200' }, brand)
        const rows = result.messages.filter((message) => message.headers.operation === 'insert')
        expect(rows).toHaveLength(200)
        expect(new Set(rows.map((row) => row.key)).size).toBe(200)
        expect(result.requests).toBeGreaterThan(5)
        expect(result.messages.filter((message) => message.headers.control === 'snapshot-end')).toHaveLength(1)
      } finally {
        await small.close()
      }
    })

    it('answers offset=now at once with the latest offset and no history', async () => {
      const response = await fetchShape({ table: 'users', offset: 'now' })
      expect(response.status).toBe(200)
      expect(response.header('@offset')).toMatch(/^\d+_(\d+|inf)$/)
      expect(response.header('@has-data')).toBe('false')
      expect(response.header('@up-to-date')).toBe('')
      expect(response.header('@schema')).not.toBeNull()
      expect(response.header('etag')).toMatch(new RegExp(`^"${response.header('@handle')}:now:[^:]+:-?\\d+"$`))
      expect(controls(response)).toEqual(['up-to-date'])
    })

    it('log=changes_only answers -1 with only snapshot-end', async () => {
      const response = await fetchShape({ table: 'issues', log: 'changes_only', offset: '-1' })
      expect(response.status).toBe(200)
      expect(changes(response)).toEqual([])
      const [end] = messages(response)
      expect(end?.headers).toMatchObject({
        control: 'snapshot-end',
        xmin: expect.stringMatching(/^\d+$/),
        xmax: expect.stringMatching(/^\d+$/),
        xip_list: []
      })
    })

    it('answers HEAD with the headers of GET and no body', async () => {
      const head = await fetchShape({ table: 'projects', offset: '-1' }, { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.text).toBe('')
      expect(head.header('@offset')).toBe('0_0')
      expect(head.header('@handle')).toMatch(/^\d+-\d+$/)
    })

    it('answers If-None-Match with 304 and the same cache headers', async () => {
      const first = await fetchShape({ table: 'projects', offset: '-1' })
      const again = await fetchShape(
        { table: 'projects', offset: '-1' },
        { headers: { 'if-none-match': first.header('etag') ?? '' } }
      )
      expect(again.status).toBe(304)
      expect(again.text).toBe('')
      expect(again.header('cache-control')).toBe(first.header('cache-control'))
      expect(again.header('@schema')).toBeNull()
    })
  })

  describe('must-refetch', () => {
    it('answers an unknown or mismatched handle with 409 and the current handle', async () => {
      const first = await fetchShape({ table: 'comments', where: 'edited', offset: '-1' })
      const conflict = await fetchShape({ table: 'comments', where: 'edited', offset: '0_0', handle: '123-456' })
      expect(conflict.status).toBe(409)
      expect(conflict.body).toEqual([{ headers: { control: 'must-refetch' } }])
      expect(conflict.header('@handle')).toBe(first.header('@handle'))
      expect(conflict.header('cache-control')).toBe('public, max-age=60, must-revalidate')
      const otherShape = await fetchShape({
        table: 'comments',
        where: 'NOT edited',
        offset: '0_0',
        handle: first.header('@handle') ?? ''
      })
      expect(otherShape.status).toBe(409)
      expect(otherShape.header('@handle')).not.toBe(first.header('@handle'))
    })

    it('invalidates shapes on DELETE, TRUNCATE and a schema change', async () => {
      await sql('CREATE TABLE refetch_demo (id int PRIMARY KEY, note text)')
      await sql("INSERT INTO refetch_demo VALUES (1, 'a')")
      const shape = { table: 'refetch_demo' }
      const expectRefetch = async (handle: string, offset: string) => {
        const response = await fetchShape({ ...shape, offset, handle })
        expect(response.status).toBe(409)
        expect(response.header('@handle')).not.toBe(handle)
        return response
      }
      let synced = await syncToEnd(api.server.url, shape, brand)
      const deleted = await fetch(new URL(`/v1/shape?table=refetch_demo&handle=${synced.handle}`, api.server.url), {
        method: 'DELETE'
      })
      expect(deleted.status).toBe(202)
      await expectRefetch(synced.handle, synced.offset)

      synced = await syncToEnd(api.server.url, shape, brand)
      const held = fetchShape({ ...shape, offset: synced.offset, handle: synced.handle, live: 'true' })
      await sql('TRUNCATE refetch_demo')
      expect((await held).status).toBe(409)

      synced = await syncToEnd(api.server.url, shape, brand)
      await sql('ALTER TABLE refetch_demo ADD COLUMN extra int')
      await sql("INSERT INTO refetch_demo VALUES (2, 'b', 1)")
      await expect
        .poll(async () => (await fetchShape({ ...shape, offset: synced.offset, handle: synced.handle })).status, {
          timeout: 5000
        })
        .toBe(409)
      const fresh = await syncToEnd(api.server.url, shape, brand)
      expect(fresh.messages.filter((message) => message.key).map((message) => message.value)).toEqual([
        { id: '2', note: 'b', extra: '1' }
      ])
    })

    it('DELETE answers 404 for no shape and 400 for a mismatched handle', async () => {
      const missing = await fetch(new URL('/v1/shape?handle=1-2', api.server.url), { method: 'DELETE' })
      expect(missing.status).toBe(404)
      const first = await fetchShape({ table: 'projects', where: 'archived', offset: '-1' })
      const mismatch = await fetch(
        new URL(`/v1/shape?table=projects&where=archived&handle=x${first.header('@handle')}`, api.server.url),
        { method: 'DELETE' }
      )
      expect(mismatch.status).toBe(400)
      expect(await mismatch.json()).toMatchObject({ message: expect.stringContaining('do not match') })
    })
  })
})
