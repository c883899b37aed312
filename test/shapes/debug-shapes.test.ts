import { mkdtemp, rm } from 'node:fs/promises'
import { get as httpGet } from 'node:http'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startEmbeddedPostgres } from '../../src/main/db/embedded'
import { isRoot } from '../../src/main/db/run-as'
import { ServerStateSchema, type ShapeState } from '../../src/shared/protocol/debug-shapes'
import { allPages, debugShapes, entry } from '../support/debug-shapes'
import { shapeUrl, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const SECRET = 'inventory-secret'

/** A live long-poll held open by the server until it is aborted (or the shape changes). */
function holdLongPoll(server: TestShapeServer, shape: Record<string, string>, handle: string, offset: string) {
  const controller = new AbortController()
  const url = shapeUrl(server.url, { ...shape, handle, offset, live: 'true' })
  const answered = fetch(url, { signal: controller.signal })
    .then(async (response) => ({ status: response.status, text: await response.text(), headers: response.headers }))
    .catch(() => null)
  return { answered, abort: () => controller.abort() }
}

/** An SSE stream kept open until aborted. */
function openSse(server: TestShapeServer, shape: Record<string, string>, handle: string, offset: string) {
  const controller = new AbortController()
  const url = shapeUrl(server.url, { ...shape, handle, offset, live: 'true', live_sse: 'true' })
  const opened = fetch(url, { signal: controller.signal }).then((response) => {
    void response.body
      ?.getReader()
      .read()
      .catch(() => undefined)
    return response.status
  })
  return { opened, abort: () => controller.abort() }
}

describe('GET /v1/debug/shapes behind --secret', () => {
  let server: TestShapeServer
  const auth = { secret: SECRET }
  const shapes: Array<{ where: string; handle: string; offset: string }> = []
  const COUNT = 12
  const whereOf = (index: number) => `id BETWEEN ${96000 + index * 10} AND ${96000 + index * 10 + 4}`
  const withSecret = (shape: Record<string, string>) => ({ ...shape, secret: SECRET })

  beforeAll(async () => {
    server = await startTestShapeServer({ secret: SECRET, longPollTimeout: 20_000 })
    await server.pool.query(
      "INSERT INTO issues (id, project_id, title) SELECT g, 1000000001, 'inventory ' || g FROM generate_series(96000, 96200) g"
    )
    for (let index = 0; index < COUNT; index++) {
      const where = whereOf(index)
      const synced = await syncToEnd(server.url, withSecret({ table: 'issues', where }))
      shapes.push({ where, handle: synced.handle, offset: synced.offset })
    }
  })
  afterAll(async () => server?.close())

  it('answers 401 without the secret or with a wrong one, as /v1/shape does; 200 with it', async () => {
    expect((await debugShapes(server)).status).toBe(401)
    const wrong = await debugShapes(server, { secret: 'not-it' })
    expect(wrong.status).toBe(401)
    expect(wrong.body).toEqual({ message: 'Unauthorized - Invalid API secret' })
    for (const path of ['/v1/debug/shapes/', '/v1//debug/shapes', '//v1/debug/shapes', '/v1/debug/%73hapes'])
      expect((await fetch(`${server.url}${path}`)).status, path).toBe(401)
    expect((await debugShapes(server, { api_secret: SECRET })).status).toBe(200)
    const answer = await debugShapes(server, auth)
    expect(answer.status).toBe(200)
    expect(answer.headers.get('cache-control')).toBe('no-store')
    const state = answer.state()
    expect(state.server.shapes).toBe(COUNT)
    expect(state.matched).toBe(COUNT)
  })

  it('refuses a foreign Host or Origin before anything else, and echoes an allowed Origin for CORS', async () => {
    const foreignOrigin = await debugShapes(server, auth, { origin: 'https://evil.example' })
    expect(foreignOrigin.status).toBe(403)
    expect(foreignOrigin.headers.get('access-control-allow-origin')).toBeNull()
    const foreignHost = await new Promise<number>((resolve, reject) =>
      httpGet(
        `${server.url}/v1/debug/shapes?secret=${SECRET}`,
        { headers: { host: 'rebound.example' } },
        (response) => {
          response.resume()
          resolve(response.statusCode ?? 0)
        }
      ).on('error', reject)
    )
    expect(foreignHost).toBe(403)
    const local = await debugShapes(server, auth, { origin: 'http://localhost:5173' })
    expect(local.status).toBe(200)
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    const response = await fetch(shapeUrl(server.url, auth, '/v1/debug/shapes'), { method: 'POST' })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
  })

  it('pages through every shape with limit and after, in last-use order, each shape once', async () => {
    const pages = await allPages(server, 5, auth)
    expect(pages.map((page) => page.shapes.length)).toEqual([5, 5, 2])
    expect(pages.map((page) => page.offset)).toEqual([0, 5, 10])
    expect(pages.at(-1)?.next).toBeNull()
    const listed = pages.flatMap((page) => page.shapes)
    // none used since it was made: the order they were made in, the first one the next to be dropped
    expect(listed.map((shape) => shape.handle)).toEqual(shapes.map((shape) => shape.handle))
    expect(listed.map((shape) => shape.eviction_rank)).toEqual(shapes.map((_, index) => index + 1))
    const first = listed[0] as ShapeState
    expect(first.definition).toEqual({
      table: 'public.issues',
      where: whereOf(0),
      params: {},
      columns: null,
      replica: 'default',
      log: 'full',
      subquery_dependencies: []
    })
    expect(first.phase).toBe('ready')
    expect(first.snapshot_chunks).toBe(1)
    expect(first.snapshot_bytes).toBeGreaterThan(0)
    expect(first.disk_bytes).toBe(first.snapshot_bytes + first.log_bytes)
    expect(first.latest_offset).toBe('0_inf')
    expect(first.last_change_at).toBeNull()
  })

  it('refuses a limit past 1,000, a malformed one and an after that no page gave', async () => {
    for (const [params, field] of [
      [{ limit: '1001' }, 'limit'],
      [{ limit: '-1' }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ after: 'abc' }, 'after']
    ] as const) {
      const answer = await debugShapes(server, { ...auth, ...params })
      expect(answer.status, JSON.stringify(params)).toBe(400)
      expect(answer.body).toMatchObject({ message: 'Invalid request', errors: { [field]: [expect.any(String)] } })
    }
    // limit=0: the summary and the replication slots alone
    const summary = (await debugShapes(server, { ...auth, limit: '0' })).state()
    expect(summary.shapes).toEqual([])
    expect(summary.matched).toBe(COUNT)
    expect(summary.replication.slots.filter((slot) => slot.ours)).toHaveLength(1)
  })

  it('counts the long-polls held and the SSE streams open on each shape, and forgets them once they end', async () => {
    const [polled, streamed] = shapes as [(typeof shapes)[0], (typeof shapes)[0]]
    const polls = [1, 2, 3].map(() =>
      holdLongPoll(server, withSecret({ table: 'issues', where: polled.where }), polled.handle, polled.offset)
    )
    const streams = [1, 2].map(() =>
      openSse(server, withSecret({ table: 'issues', where: streamed.where }), streamed.handle, streamed.offset)
    )
    expect(await Promise.all(streams.map((stream) => stream.opened))).toEqual([200, 200])
    const counts = async () => {
      const state = (await debugShapes(server, { ...auth, limit: '1000' })).state()
      return {
        polls: entry(state, polled.handle)?.long_polls,
        streams: entry(state, streamed.handle)?.sse_streams,
        others: state.shapes
          .filter((shape) => shape.handle !== polled.handle && shape.handle !== streamed.handle)
          .map((shape) => shape.long_polls + shape.sse_streams)
          .reduce((a, b) => a + b, 0),
        total: [state.server.long_polls, state.server.sse_streams]
      }
    }
    await expect.poll(counts).toEqual({ polls: 3, streams: 2, others: 0, total: [3, 2] })
    for (const poll of polls) poll.abort()
    for (const stream of streams) stream.abort()
    await expect.poll(counts).toEqual({ polls: 0, streams: 0, others: 0, total: [0, 0] })
  })

  it('a change shows as the latest offset and the last change time; a request moves its shape to the end of the order', async () => {
    const changed = shapes[3] as (typeof shapes)[0]
    const before = Date.now()
    const poll = holdLongPoll(
      server,
      withSecret({ table: 'issues', where: changed.where }),
      changed.handle,
      changed.offset
    )
    await expect
      .poll(
        async () => entry((await debugShapes(server, { ...auth, limit: '1000' })).state(), changed.handle)?.long_polls
      )
      .toBe(1)
    await server.pool.query("UPDATE issues SET title = 'changed for the inventory' WHERE id = $1", [96030])
    const answer = await poll.answered
    expect(answer?.status).toBe(200)
    const offset = answer?.headers.get('service-offset')
    const state = (await debugShapes(server, { ...auth, limit: '1000' })).state()
    const shape = entry(state, changed.handle) as ShapeState
    expect(shape.log_entries).toBe(1)
    expect(shape.latest_offset).toBe(offset)
    expect(shape.latest_offset).not.toBe('0_inf')
    expect(Date.parse(shape.last_change_at ?? '')).toBeGreaterThanOrEqual(before - 1000)
    expect(shape.log_bytes).toBeGreaterThan(0)
    // the long-poll was a use: the changed shape is now the most recently used one
    expect(shape.eviction_rank).toBe(COUNT)
    expect(state.shapes.at(-1)?.handle).toBe(changed.handle)
    expect(Date.parse(shape.last_used_at ?? '')).toBeGreaterThanOrEqual(before - 1000)
  })

  it('shows a definition with params, columns, replica and subquery dependencies', async () => {
    const shape = {
      table: 'issues',
      where: 'project_id IN (SELECT id FROM projects WHERE archived = false) AND priority > $1',
      'params[1]': '0',
      columns: 'id,title,project_id,priority',
      replica: 'full'
    }
    const synced = await syncToEnd(server.url, withSecret(shape))
    const state = (await debugShapes(server, { ...auth, limit: '1000' })).state()
    expect(entry(state, synced.handle)?.definition).toEqual({
      table: 'public.issues',
      where: shape.where,
      params: { '1': '0' },
      columns: ['id', 'project_id', 'title', 'priority'],
      replica: 'full',
      log: 'full',
      subquery_dependencies: [{ table: 'public.projects', columns: ['id'], where: expect.stringContaining('archived') }]
    })
    await fetch(shapeUrl(server.url, withSecret({ handle: synced.handle })), { method: 'DELETE' })
  })

  it('a dropped shape disappears from the inventory', async () => {
    const dropped = shapes[5] as (typeof shapes)[0]
    const deleted = await fetch(shapeUrl(server.url, withSecret({ handle: dropped.handle })), { method: 'DELETE' })
    expect(deleted.status).toBe(202)
    const state = (await debugShapes(server, { ...auth, limit: '1000' })).state()
    expect(entry(state, dropped.handle)).toBeUndefined()
    expect(state.server.shapes).toBe(COUNT - 1)
    expect(state.matched).toBe(COUNT - 1)
    expect(state.shapes.map((shape) => shape.eviction_rank)).toEqual(
      Array.from({ length: COUNT - 1 }, (_, index) => index + 1)
    )
  })

  const call = async <T>(name: string, input: unknown): Promise<T> => {
    const result = await server.app.dispatch(name, input)
    if (!result.ok) throw new Error(`${name}: ${JSON.stringify(result.body)}`)
    return result.value as T
  }

  it('server.state answers what GET /v1/debug/shapes does (the contract needs no secret: the app token guards it)', async () => {
    // from none: the tests above made theirs
    await call('server.dropAllShapes', {})
    const made: string[] = []
    for (const where of ['priority = 301', 'priority = 302', 'priority = 303'])
      made.push((await syncToEnd(server.url, { table: 'issues', where, secret: SECRET })).handle)
    const viaContract = ServerStateSchema.parse(await call('server.state', { limit: 2 }))
    const viaHttp = (await debugShapes(server, { secret: SECRET, limit: '2' })).state()
    expect(viaContract.shapes.map((shape) => shape.handle)).toEqual(made.slice(0, 2))
    expect(viaContract.shapes).toEqual(viaHttp.shapes)
    expect(viaContract.next).toBe(viaHttp.next)
    expect(viaContract.server).toEqual(viaHttp.server)
    expect(viaContract.replication.slot_name).toBe(viaHttp.replication.slot_name)
    // sorted and filtered by main, a window at a time
    const sorted = ServerStateSchema.parse(
      await call('server.state', {
        sort: { key: 'handle', direction: 'descending' },
        filter: 'PRIORITY = 30',
        limit: 10
      })
    )
    expect(sorted.shapes.map((shape) => shape.handle)).toEqual([...made].sort().reverse())
    const window = ServerStateSchema.parse(await call('server.state', { offset: 1, limit: 1, filter: '302' }))
    expect(window).toMatchObject({ matched: 1, offset: 1, shapes: [] })
    const refused = await server.app.dispatch('server.state', {
      after: '3',
      sort: { key: 'handle', direction: 'ascending' }
    })
    expect(refused).toMatchObject({ ok: false, status: 400, body: { error: { code: 'invalid_input' } } })

    expect(await call('server.dropShape', { handle: made[0] })).toEqual({ dropped: true })
    expect(await call('server.dropShape', { handle: made[0] })).toEqual({ dropped: false })
    const after = ServerStateSchema.parse(await call('server.state', {}))
    expect(after.shapes.map((shape) => shape.handle)).toEqual(made.slice(1))
    expect(await call('server.dropAllShapes', {})).toEqual({ dropped: 2 })
    expect(ServerStateSchema.parse(await call('server.state', {})).server.shapes).toBe(0)
    const gone = await fetch(
      shapeUrl(server.url, {
        table: 'issues',
        where: 'priority = 302',
        handle: made[1]!,
        offset: '0_inf',
        secret: SECRET
      })
    )
    expect(gone.status).toBe(409)
  })

  it.runIf(isRoot())(
    'db.pruneClusters removes a cluster whose data folder is gone, and db.clusters no longer lists it',
    async () => {
      const parent = await mkdtemp(join(tmpdir(), 'syncscope-server-page-'))
      const orphan = await startEmbeddedPostgres({ dataDir: join(parent, 'postgres') })
      await orphan.stop()
      await rm(parent, { recursive: true, force: true })
      const id = basename(orphan.clusterDir)
      const listed = await call<{ clusters: Array<{ id: string; orphaned: boolean; running: boolean }> }>(
        'db.clusters',
        {}
      )
      expect(listed.clusters.find((cluster) => cluster.id === id)).toMatchObject({ orphaned: true, running: false })
      const pruned = await call<{ removed: Array<{ id: string }> }>('db.pruneClusters', {})
      expect(pruned.removed.map((cluster) => cluster.id)).toContain(id)
      const again = await call<{ clusters: Array<{ id: string }> }>('db.clusters', {})
      expect(again.clusters.map((cluster) => cluster.id)).not.toContain(id)
    }
  )
})
