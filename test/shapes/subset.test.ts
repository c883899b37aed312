import { ShapeStream, type Row } from '@electric-sql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { type Message, changes, get, shapeUrl, syncToEnd } from '../support/shape-http'

interface SubsetBody {
  metadata: { xmin: string; xmax: string; xip_list: string[]; database_lsn: string; snapshot_mark: number }
  data: Message[]
}

describe('subset snapshots', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: 'electric', longPollTimeout: 1500 })
  })
  afterAll(async () => server?.close())

  const SHAPE = { table: 'issues', where: 'project_id = 1000000002', log: 'changes_only' }
  const post = (params: Record<string, string>, body: unknown) =>
    fetch(shapeUrl(server.url, params), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body)
    })
  const ids = (body: SubsetBody) => body.data.map((message) => Number(message.value?.id))
  const shapeIds = async (extra = 'true') =>
    (
      await server.pool.query<{ id: number }>(
        `SELECT id FROM issues WHERE project_id = 1000000002 AND (${extra}) ORDER BY id`
      )
    ).rows.map((row) => Number(row.id))

  it('answers POST with rows and snapshot metadata from one snapshot, never cached', async () => {
    const response = await post(
      { ...SHAPE, offset: '-1' },
      { where: 'priority = $1', params: { '1': '3' }, order_by: 'id DESC', limit: 5, offset: 1 }
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('no-cache')
    expect(response.headers.get('electric-snapshot')).toBe('true')
    expect(response.headers.get('electric-offset')).toBe('0_0')
    expect(response.headers.get('electric-handle')).toMatch(/^\d+-\d+$/)
    expect(response.headers.get('electric-schema')).toContain('"id"')
    expect(response.headers.get('etag')).toBeNull()
    const body = (await response.json()) as SubsetBody
    expect(Object.keys(body.metadata).sort()).toEqual(['database_lsn', 'snapshot_mark', 'xip_list', 'xmax', 'xmin'])
    expect(body.metadata.database_lsn).toMatch(/^\d+$/)
    expect(ids(body)).toEqual((await shapeIds('priority = 3')).reverse().slice(1, 6))
    expect(
      body.data.every(
        (message) =>
          message.headers.operation === 'insert' && message.headers.snapshot_mark === body.metadata.snapshot_mark
      )
    ).toBe(true)
  })

  it('answers the legacy GET form identically', async () => {
    const posted = (await (
      await post({ ...SHAPE, offset: '-1' }, { where: 'priority = $1', params: { '1': '2' }, order_by: 'id', limit: 3 })
    ).json()) as SubsetBody
    const legacy = await get(
      server.url,
      {
        ...SHAPE,
        offset: '-1',
        subset__where: 'priority = $1',
        subset__params: '{"1":"2"}',
        subset__order_by: 'id',
        subset__limit: '3'
      },
      {},
      'electric'
    )
    expect(legacy.status).toBe(200)
    expect(legacy.header('@snapshot')).toBe('true')
    expect(ids(legacy.body as SubsetBody)).toEqual(ids(posted))
  })

  it.each(['true', '1=1 OR true', 'id > 0 OR project_id <> 1000000002'])(
    'never widens the shape: subset where %s',
    async (where) => {
      const response = await post({ ...SHAPE, offset: '-1' }, { where })
      expect(response.status).toBe(200)
      expect(ids((await response.json()) as SubsetBody).sort((a, b) => a - b)).toEqual(await shapeIds())
    }
  )

  const rejected: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['a where escaping its parentheses', { where: 'true) OR (true' }, 'where', /syntax error/],
    ['a subquery', { where: 'id IN (SELECT id FROM issues)' }, 'where', /Subqueries are not allowed/],
    ['a stacked statement', { where: 'true; DELETE FROM issues' }, 'where', /;/],
    [
      'an expression in order_by',
      { order_by: 'CAST((SELECT version()) AS int)', limit: 1 },
      'order_by',
      /expressions are not allowed|column/
    ],
    ['a function in order_by', { order_by: 'pg_sleep(5)', limit: 1 }, 'order_by', /expressions are not allowed|column/],
    ['a stacked order_by', { order_by: 'id; DROP TABLE issues', limit: 1 }, 'order_by', /;/],
    ['limit without order_by', { limit: 5 }, 'order_by', /required when limit or offset/],
    ['offset without order_by', { offset: 5 }, 'order_by', /required when limit or offset/],
    ['a negative limit', { limit: -1, order_by: 'id' }, 'limit', /greater than 0/],
    ['a negative offset', { offset: -1, order_by: 'id' }, 'offset', /greater than or equal to 0/],
    ['a fractional limit', { limit: 1.5, order_by: 'id' }, 'limit', /invalid/],
    ['a limit above the maximum', { limit: 100_001, order_by: 'id' }, 'limit', /less than or equal to 100000/],
    ['params with gaps', { where: 'id = $2', params: { '2': '1' } }, 'params', /sequentially/]
  ]
  it.each(rejected)('rejects %s with 400 under errors.subset', async (_label, body, field, message) => {
    const response = await post({ ...SHAPE, offset: '-1' }, body)
    expect(response.status).toBe(400)
    const json = (await response.json()) as { errors: { subset: Record<string, string[]> } }
    expect(Object.keys(json.errors.subset)).toEqual([field])
    expect(json.errors.subset[field]?.join(' ')).toMatch(message)
  })

  it('limits subset where and order_by to queryable_columns, which also pick the synced columns', async () => {
    const shape = { ...SHAPE, queryable_columns: 'id,priority' }
    const ok = await post(
      { ...shape, offset: '-1' },
      { where: 'priority >= 2', order_by: 'priority DESC NULLS LAST, id', limit: 2 }
    )
    expect(ok.status).toBe(200)
    const body = (await ok.json()) as SubsetBody
    expect(Object.keys(body.data[0]?.value ?? {})).toEqual(['id', 'priority'])
    const hiddenWhere = await post({ ...shape, offset: '-1' }, { where: "title = 'x'" })
    expect(hiddenWhere.status).toBe(400)
    expect(JSON.stringify(await hiddenWhere.json())).toContain('title')
    const hiddenOrder = await post({ ...shape, offset: '-1' }, { order_by: 'title', limit: 1 })
    expect(hiddenOrder.status).toBe(400)
    const mainWhere = await post(
      { ...shape, where: 'project_id = 1000000002 AND title IS NOT NULL', offset: '-1' },
      { where: 'true' }
    )
    expect(mainWhere.status).toBe(200)
    const badQueryable = await post({ ...SHAPE, queryable_columns: 'priority', offset: '-1' }, { where: 'true' })
    expect(badQueryable.status).toBe(400)
    expect(JSON.stringify(await badQueryable.json())).toMatch(
      /queryable columns must include all primary key columns, missing: id/
    )
  })

  it('refuses bodies that are not JSON objects, too large, and GET URLs that are too long', async () => {
    expect((await post({ ...SHAPE, offset: '-1' }, 'not json')).status).toBe(400)
    expect(await (await post({ ...SHAPE, offset: '-1' }, '[1]')).json()).toEqual({
      error: 'Request body must be a JSON object'
    })
    const huge = await post({ ...SHAPE, offset: '-1' }, { where: `id IN (${'1,'.repeat(4_100_000)}1)` })
    expect(huge.status).toBe(413)
    const ids = Array.from({ length: 2000 }, (_, i) => i).join(',')
    const long = await get(server.url, { ...SHAPE, offset: '-1', subset__where: `id IN (${ids})` }, {}, 'electric')
    expect(long.status).toBe(414)
    expect((long.body as { message: string }).message).toMatch(/POST/)
    const same = await post({ ...SHAPE, offset: '-1' }, { where: `id IN (${ids})` })
    expect(same.status).toBe(200)
  })

  it('takes rows and metadata from one snapshot: a transaction in flight is invisible to both', async () => {
    const synced = await syncToEnd(server.url, { ...SHAPE, replica: 'full' }, 'electric')
    const writer = await server.pool.connect()
    try {
      await writer.query('BEGIN')
      await writer.query("INSERT INTO issues (id, project_id, title) VALUES (9800, 1000000002, 'in flight')")
      const { rows } = await writer.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')
      const response = await post(
        { ...SHAPE, replica: 'full', offset: synced.offset, handle: synced.handle },
        { where: 'id >= 9800' }
      )
      const body = (await response.json()) as SubsetBody
      const xid = BigInt(rows[0]?.xid ?? '0')
      const invisible = xid >= BigInt(body.metadata.xmax) || body.metadata.xip_list.includes(String(xid))
      expect(invisible, JSON.stringify(body.metadata)).toBe(true)
      expect(body.data).toEqual([])
      expect(response.headers.get('electric-offset')).toBe(synced.offset)
      const live = get(
        server.url,
        { ...SHAPE, replica: 'full', offset: synced.offset, handle: synced.handle, live: 'true' },
        {},
        'electric'
      )
      await writer.query('COMMIT')
      const [insert] = changes(await live)
      expect(insert?.value).toMatchObject({ id: '9800', title: 'in flight' })
      expect(String((insert?.headers.txids as number[])[0])).toBe(rows[0]?.xid)
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined)
      writer.release()
    }
  })

  it('works for a stateless consumer: changes_only + now + replica=full', async () => {
    const shape = { table: 'issues', where: 'id BETWEEN 9900 AND 9999', log: 'changes_only', replica: 'full' }
    await server.pool.query("INSERT INTO issues (id, project_id, title) VALUES (9900, 1000000001, 'before')")
    const now = await get(server.url, { ...shape, offset: 'now' }, {}, 'electric')
    const handle = now.header('@handle') ?? ''
    const offset = now.header('@offset') ?? ''
    const snapshot = (await (await post({ ...shape, offset, handle }, { where: 'true' })).json()) as SubsetBody
    expect(snapshot.data.map((message) => message.value?.title)).toEqual(['before'])
    const live = get(server.url, { ...shape, offset, handle, live: 'true' }, {}, 'electric')
    await server.pool.query('UPDATE issues SET priority = 1 WHERE id = 9900')
    const [update] = changes(await live)
    expect(update?.headers.operation).toBe('update')
    expect(update?.value).toMatchObject({ id: '9900', title: 'before', priority: '1' })
    expect(update?.old_value).toEqual({ priority: '3' })
  })

  it.each(['GET', 'POST'] as const)(
    'serves requestSnapshot of the official client with subsetMethod %s',
    async (subsetMethod) => {
      const controller = new AbortController()
      const stream = new ShapeStream<Row>({
        url: `${server.url}/v1/shape`,
        params: { table: 'issues', where: 'project_id = 1000000003' },
        log: 'changes_only',
        subsetMethod,
        signal: controller.signal
      })
      try {
        await new Promise<void>((resolve, reject) =>
          stream.subscribe((messages) => {
            if (messages.some((m) => 'control' in m.headers && m.headers.control === 'up-to-date')) resolve()
          }, reject)
        )
        const { data, metadata } = await stream.requestSnapshot({
          where: 'priority = $1',
          params: { '1': '1' },
          orderBy: 'id',
          limit: 4
        })
        expect(data.map((message) => Number(message.value.id))).toEqual(
          (
            await server.pool.query<{ id: number }>(
              'SELECT id FROM issues WHERE project_id = 1000000003 AND priority = 1 ORDER BY id LIMIT 4'
            )
          ).rows.map((row) => Number(row.id))
        )
        expect(metadata.xmax).toMatch(/^\d+$/)
      } finally {
        controller.abort()
      }
    }
  )
})
