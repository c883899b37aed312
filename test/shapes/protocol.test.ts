import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { type Message, changes, controls, get, messages, syncToEnd } from '../support/shape-http'

const LONG_POLL_MS = 1500

describe.each(['service', 'electric'] as const)('shape API with header brand %s', (brand) => {
  let server: TestShapeServer
  const fetchShape = (params: Record<string, string>, init: RequestInit = {}) => get(server.url, params, init, brand)
  const sql = (text: string, values: unknown[] = []) => server.pool.query(text, values)

  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: brand, longPollTimeout: LONG_POLL_MS, sseKeepAlive: 400 })
  })
  afterAll(async () => server?.close())

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

  describe('live', () => {
    /**
     * The changes of the next live answer that has any: a long-poll that times out first (a commit slowed down by the
     * disk traffic of other test files) is asked again from where it left off.
     */
    async function nextChanges(
      shape: Record<string, string>,
      handle: string,
      offset: () => string,
      moveTo: (offset: string) => void
    ) {
      const deadline = Date.now() + 20_000
      for (;;) {
        const response = await fetchShape({ ...shape, offset: offset(), handle, live: 'true' })
        expect(response.status).toBe(200)
        moveTo(response.header('@offset') ?? offset())
        const found = changes(response)
        if (found.length > 0 || Date.now() > deadline) return found
      }
    }

    async function followLive(shape: Record<string, string>) {
      const synced = await syncToEnd(server.url, shape, brand)
      return { handle: synced.handle, offset: synced.offset, synced }
    }

    it("answers offset=now only once the new shape's snapshot is taken, so a change committed after the answer is in its log", async () => {
      const shape = { table: 'issues', where: 'id = 4', log: 'changes_only', replica: 'full' }
      await fetchShape({ table: 'issues', where: 'id = 5', offset: '-1' }) // the table is followed already: no publication change below
      const snapshotWaiting = async () =>
        (
          await sql(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'syncscope-shapes' AND wait_event_type = 'Lock'"
          )
        ).rows
      const locker = await server.pool.connect()
      try {
        await locker.query('BEGIN')
        await locker.query('LOCK TABLE issues IN ACCESS EXCLUSIVE MODE')
        const answer = fetchShape({ ...shape, offset: 'now' })
        let answered = false
        void answer.then(() => (answered = true))
        await expect.poll(snapshotWaiting, { timeout: 10_000, interval: 50 }).not.toHaveLength(0)
        // Answered now, a change committed before the snapshot (which then sees it) would be lost to this client: a
        // request sent after it is answered while it is still held
        expect((await fetch(`${server.url}/v1/health`)).status).toBe(200)
        expect(answered).toBe(false)
        await locker.query('COMMIT')
        const response = await answer
        expect(response.status).toBe(200)
        await sql(`UPDATE issues SET title = 'committed after the now answer' WHERE id = 4`)
        let offset = response.header('@offset') ?? ''
        const found = await nextChanges(
          shape,
          response.header('@handle') ?? '',
          () => offset,
          (next) => (offset = next)
        )
        expect(found.map((change) => change.value?.title)).toEqual(['committed after the now answer'])
      } finally {
        await locker.query('ROLLBACK')
        locker.release()
      }
    })

    it('answers a long-poll timeout with 200 and only up-to-date', async () => {
      const { handle, offset } = await followLive({ table: 'users', where: "email = 'nobody@example.com'" })
      const started = Date.now()
      const response = await fetchShape({
        table: 'users',
        where: "email = 'nobody@example.com'",
        offset,
        handle,
        live: 'true',
        cursor: '0'
      })
      expect(Date.now() - started).toBeGreaterThanOrEqual(LONG_POLL_MS - 100)
      expect(response.status).toBe(200)
      expect(controls(response)).toEqual(['up-to-date'])
      expect(response.header('@offset')).toBe(offset)
      expect(response.header('@has-data')).toBe('false')
      expect(response.header('@cursor')).toMatch(/^\d+$/)
      expect(response.header('cache-control')).toBe('public, max-age=5, stale-while-revalidate=5')
      expect(response.header('@schema')).toBeNull()
      const cursor = response.header('@cursor') ?? ''
      const next = await fetchShape({
        table: 'users',
        where: "email = 'nobody@example.com'",
        offset,
        handle,
        live: 'true',
        cursor
      })
      expect(Number(next.header('@cursor'))).toBeGreaterThan(Number(cursor))
    })

    it('delivers inserts, updates and deletes, and rows moving in and out of the where', async () => {
      const shape = { table: 'issues', columns: 'id,title,priority,project_id', where: 'priority = 5 AND id > 9000' }
      const live = await followLive(shape)
      const handle = live.handle
      let offset = live.offset
      const poll = () =>
        nextChanges(
          shape,
          handle,
          () => offset,
          (next) => (offset = next)
        )
      const pending = poll()
      await sql(
        "INSERT INTO issues (id, project_id, title, priority) VALUES (9001, 1000000001, 'a', 5), (9002, 1000000001, 'b', 1)"
      )
      const inserted = await pending
      expect(inserted.map((change) => [change.headers.operation, change.key])).toEqual([
        ['insert', '"public"."issues"/"9001"']
      ])
      expect(inserted[0]?.headers).toMatchObject({
        relation: ['public', 'issues'],
        lsn: expect.stringMatching(/^\d+$/),
        op_position: 0,
        last: true,
        txids: [expect.any(Number)]
      })
      expect(offset).toBe(`${inserted[0]?.headers.lsn as string}_0`)

      const moves = poll()
      await sql('BEGIN')
      await sql("UPDATE issues SET title = 'a2' WHERE id = 9001")
      await sql('UPDATE issues SET priority = 5 WHERE id = 9002')
      await sql('UPDATE issues SET priority = 4 WHERE id = 9001')
      await sql('COMMIT')
      const moved = await moves
      expect(moved.map((change) => [change.headers.operation, change.key, change.value])).toEqual([
        ['update', '"public"."issues"/"9001"', { id: '9001', title: 'a2' }],
        ['insert', '"public"."issues"/"9002"', { id: '9002', title: 'b', priority: '5', project_id: '1000000001' }],
        ['delete', '"public"."issues"/"9001"', { id: '9001' }]
      ])
      expect(moved.map((change) => change.headers.op_position)).toEqual([0, 2, 4])
      expect(moved.map((change) => change.headers.last ?? false)).toEqual([false, false, true])

      const untouched = poll()
      await sql("UPDATE issues SET body = 'not selected' WHERE id = 9002")
      await sql('DELETE FROM issues WHERE id = 9002')
      expect((await untouched).map((change) => [change.headers.operation, change.value])).toEqual([
        ['delete', { id: '9002' }]
      ])
    })

    it('replica=full sends whole rows with old values, and a key change as delete + insert', async () => {
      const shape = {
        table: 'issues',
        columns: 'id,title,priority,project_id',
        where: 'id BETWEEN 9100 AND 9199',
        replica: 'full'
      }
      await sql("INSERT INTO issues (id, project_id, title) VALUES (9100, 1000000001, 'full')")
      const live = await followLive(shape)
      const handle = live.handle
      let offset = live.offset
      const poll = () =>
        nextChanges(
          shape,
          handle,
          () => offset,
          (next) => (offset = next)
        )
      const updated = poll()
      await sql('UPDATE issues SET priority = 1 WHERE id = 9100')
      expect((await updated).map((change) => [change.headers.operation, change.value, change.old_value])).toEqual([
        ['update', { id: '9100', title: 'full', priority: '1', project_id: '1000000001' }, { priority: '3' }]
      ])
      const rekeyed = poll()
      await sql('UPDATE issues SET id = 9101 WHERE id = 9100')
      const pair = await rekeyed
      expect(pair.map((change) => [change.headers.operation, change.key])).toEqual([
        ['delete', '"public"."issues"/"9100"'],
        ['insert', '"public"."issues"/"9101"']
      ])
      expect(pair[0]?.headers.key_change_to).toBe('"public"."issues"/"9101"')
      expect(pair[1]?.headers.key_change_from).toBe('"public"."issues"/"9100"')
      expect(pair[0]?.value).toEqual({ id: '9100', title: 'full', priority: '1', project_id: '1000000001' })
      expect(pair.map((change) => change.headers.op_position)).toEqual([0, 1])
    })

    it('streams SSE: data frames, up-to-date with the batch LSN, keep-alive comments', async () => {
      const shape = { table: 'issues', columns: 'id,title', where: 'id BETWEEN 9200 AND 9299' }
      const { handle, offset } = await followLive(shape)
      const controller = new AbortController()
      const response = await fetch(
        new URL(
          `/v1/shape?${new URLSearchParams({ ...shape, offset, handle, live: 'true', live_sse: 'true' })}`,
          server.url
        ),
        {
          signal: controller.signal
        }
      )
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('text/event-stream')
      expect(response.headers.get('cache-control')).toBe('public, max-age=59')
      const reader = response.body!.getReader()
      let text = ''
      const readUntil = async (pattern: RegExp) => {
        while (!pattern.test(text)) {
          const { value, done } = await reader.read()
          if (done) throw new Error(`stream ended before ${pattern}: ${text}`)
          text += new TextDecoder().decode(value)
        }
      }
      await readUntil(/: keep-alive\n\n/)
      await sql("INSERT INTO issues (id, project_id, title) VALUES (9200, 1000000001, 'sse')")
      await readUntil(/"control":"up-to-date"[^\n]*\n\n/)
      controller.abort()
      const frames = text.split('\n\n').filter((frame) => frame.startsWith('data: '))
      const parsed = frames.map((frame) => JSON.parse(frame.slice(6)) as Message)
      expect(parsed[0]).toMatchObject({
        headers: { operation: 'insert' },
        key: '"public"."issues"/"9200"',
        value: { id: '9200', title: 'sse' }
      })
      expect(parsed[1]?.headers).toEqual({ control: 'up-to-date', global_last_seen_lsn: parsed[0]?.headers.lsn })
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
      let synced = await syncToEnd(server.url, shape, brand)
      const deleted = await fetch(new URL(`/v1/shape?table=refetch_demo&handle=${synced.handle}`, server.url), {
        method: 'DELETE'
      })
      expect(deleted.status).toBe(202)
      await expectRefetch(synced.handle, synced.offset)

      synced = await syncToEnd(server.url, shape, brand)
      const held = fetchShape({ ...shape, offset: synced.offset, handle: synced.handle, live: 'true' })
      await sql('TRUNCATE refetch_demo')
      expect((await held).status).toBe(409)

      synced = await syncToEnd(server.url, shape, brand)
      await sql('ALTER TABLE refetch_demo ADD COLUMN extra int')
      await sql("INSERT INTO refetch_demo VALUES (2, 'b', 1)")
      await expect
        .poll(async () => (await fetchShape({ ...shape, offset: synced.offset, handle: synced.handle })).status, {
          timeout: 5000
        })
        .toBe(409)
      const fresh = await syncToEnd(server.url, shape, brand)
      expect(fresh.messages.filter((message) => message.key).map((message) => message.value)).toEqual([
        { id: '2', note: 'b', extra: '1' }
      ])
    })

    it('DELETE answers 404 for no shape and 400 for a mismatched handle', async () => {
      const missing = await fetch(new URL('/v1/shape?handle=1-2', server.url), { method: 'DELETE' })
      expect(missing.status).toBe(404)
      const first = await fetchShape({ table: 'projects', where: 'archived', offset: '-1' })
      const mismatch = await fetch(
        new URL(`/v1/shape?table=projects&where=archived&handle=x${first.header('@handle')}`, server.url),
        { method: 'DELETE' }
      )
      expect(mismatch.status).toBe(400)
      expect(await mismatch.json()).toMatchObject({ message: expect.stringContaining('do not match') })
    })
  })

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
      const synced = await syncToEnd(server.url, { table: 'projects', where: 'id = 1000000001' }, brand)
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
      const health = await fetch(new URL('/v1/health', server.url))
      expect(health.status).toBe(200)
      expect(await health.json()).toEqual({ status: 'active' })
      const preflight = await fetch(new URL('/v1/shape', server.url), {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:5173', 'access-control-request-headers': 'if-none-match, x-evil' }
      })
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
      expect(preflight.headers.get('access-control-allow-headers')).toBe('if-none-match')
      expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, POST, HEAD, DELETE, OPTIONS')
      const missing = await fetch(new URL('/v1/nothing', server.url))
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
