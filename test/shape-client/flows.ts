import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Shape, type ShapeStreamOptions } from '../../src/shared/shape-client'
import { shapeParams, ShapeDraftSchema, type ShapeDraft } from '../../src/shared/shape-client/definition'
import { isChangeMessage, type Message } from '../../src/shared/shape-client/messages'
import type { HeaderBrand } from '../../src/shared/shape-client/protocol-headers'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { waitFor } from './support'

/**
 * The client's main paths against the real local shape server under one header brand: initial sync, long-poll and
 * SSE live changes, offset=now, changes_only, replica merges and a must-refetch mid-stream.
 */
export function describeFlows(brand: HeaderBrand): void {
  describe(`shape client against the local server (${brand} headers)`, () => {
    let server: TestShapeServer
    const shapes: Shape[] = []

    beforeAll(async () => {
      server = await startTestShapeServer({ headerBrand: brand, longPollTimeout: 1_000, sseKeepAlive: 300 })
    })
    afterAll(async () => {
      shapes.forEach((shape) => shape.stop())
      await server?.close()
    })

    const open = (definition: Partial<ShapeDraft> & { table: string }, options: Partial<ShapeStreamOptions> = {}) => {
      const parsed = ShapeDraftSchema.parse(definition)
      const shape = new Shape({
        url: `${server.url}/v1/shape`,
        params: shapeParams(parsed),
        log: parsed.log,
        backoff: { initialDelayMs: 50, maxDelayMs: 200, multiplier: 2 },
        ...options
      })
      shapes.push(shape)
      void shape.start()
      return shape
    }
    const titles = (shape: Shape) => [...shape.rows.values()].map((row) => row.name).sort()
    const sql = (text: string, values: unknown[] = []) => server.pool.query(text, values)

    it('tells the workbench where the local server listens (its port picked at start-up) and its brand', async () => {
      const result = await server.app.dispatch('shapesWorkbench.localServer', {})
      expect(result).toEqual({
        ok: true,
        value: {
          url: server.url,
          headerBrand: brand,
          secretRequired: false,
          longPollTimeoutMs: 1_000,
          sseKeepAliveMs: 300
        }
      })
    })

    it('syncs the initial rows, detects the brand, then follows updates, inserts, deletes and moves over long-poll', async () => {
      const shape = open({ table: 'projects', where: 'id <= $1', params: ['1000000005'] })
      await waitFor(() => shape.stream.current.upToDate, 'the initial sync')
      expect(titles(shape)).toEqual(['Project 1', 'Project 2', 'Project 3', 'Project 4', 'Project 5'])
      const state = shape.stream.current
      expect(state.brand).toBe(brand)
      expect(state.handle).toBeTruthy()
      expect(state.schema?.id).toMatchObject({ type: 'int8', pk_index: 0 })
      const first = shape.stream.recorder.exchanges[0]
      expect(first?.request.url).toContain('offset=-1')
      expect(first?.response?.headers.map(([name]) => name)).toEqual(
        expect.arrayContaining([`${brand}-handle`, `${brand}-offset`, `${brand}-schema`, 'cache-control', 'etag'])
      )
      expect(first?.request.live).toBe('off')

      await waitFor(() => shape.stream.current.phase === 'live', 'the switch to live')
      await sql(`UPDATE projects SET name = 'Renamed 2', archived = true WHERE id = 1000000002`)
      await waitFor(() => shape.rows.get('"public"."projects"/"1000000002"')?.name === 'Renamed 2', 'the update')
      // replica=default sends only the changed columns: the rest of the row is kept by merging.
      const updated = shape.stream.recorder.entries.flatMap((entry) =>
        entry.type === 'message' && isChangeMessage(entry.message) && entry.message.headers.operation === 'update'
          ? [entry.message]
          : []
      )
      expect(Object.keys(updated.at(-1)?.value ?? {}).sort()).toEqual(['archived', 'id', 'name'])
      // A live change is logged at its own position, <lsn>_<op_position>.
      const logged = shape.stream.recorder.entries.find(
        (entry) => entry.type === 'message' && entry.message === updated.at(-1)
      )
      expect(logged?.type === 'message' && logged.offset).toBe(
        `${updated.at(-1)?.headers.lsn}_${updated.at(-1)?.headers.op_position}`
      )
      expect(shape.rows.get('"public"."projects"/"1000000002"')).toMatchObject({
        id: '1000000002',
        name: 'Renamed 2',
        budget: '2469.13'
      })

      const owner = `(SELECT owner_id FROM projects WHERE id = 1000000001)`
      await sql(`INSERT INTO projects (id, name, owner_id) VALUES (900, 'Inserted', ${owner})`)
      await waitFor(() => shape.rows.get('"public"."projects"/"900"')?.name === 'Inserted', 'the insert')
      await sql(`UPDATE projects SET id = 901 WHERE id = 900`)
      await waitFor(
        () => shape.rows.has('"public"."projects"/"901"') && !shape.rows.has('"public"."projects"/"900"'),
        'the key change'
      )
      await sql(`UPDATE projects SET id = 2000000000 WHERE id = 901`)
      await waitFor(() => !shape.rows.has('"public"."projects"/"901"'), 'the row moving out of the where')
      await sql(`DELETE FROM projects WHERE id = 2000000000`)
      expect(shape.rows.size).toBe(5)
      const live = shape.stream.recorder.exchanges.filter((exchange) => exchange.request.live === 'long-poll')
      expect(live.length).toBeGreaterThan(0)
      expect(live[0]?.request.url).toMatch(/cursor=/)
    })

    it('streams live changes over SSE, recording the raw frames and keep-alive comments', async () => {
      const shape = open({ table: 'users', columns: ['id', 'name', 'karma'], where: 'karma > 990' }, { live: 'sse' })
      await waitFor(() => shape.stream.current.phase === 'live', 'the switch to SSE')
      const before = shape.rows.size
      await sql(`UPDATE users SET karma = 995 WHERE email = 'user1@example.com'`)
      await waitFor(() => shape.rows.size === before + 1, 'a row entering the shape over SSE')
      const frames = () => shape.stream.recorder.entries.filter((entry) => entry.type === 'sse-frame')
      await waitFor(
        () => frames().some((entry) => entry.type === 'sse-frame' && entry.frame.kind === 'comment'),
        'a keep-alive comment'
      )
      const kinds = new Set(frames().map((entry) => (entry.type === 'sse-frame' ? entry.frame.kind : '')))
      expect(kinds).toEqual(new Set(['data', 'comment']))
      const sseExchange = shape.stream.recorder.exchanges.find((exchange) => exchange.request.live === 'sse')
      expect(sseExchange?.request.headers).toContainEqual(['accept', 'text/event-stream'])
      expect(sseExchange?.response?.headers).toContainEqual([
        'content-type',
        expect.stringMatching(/^text\/event-stream/)
      ])
      expect(shape.stream.current.sseFellBack).toBe(false)
      await sql(`UPDATE users SET karma = 37 WHERE email = 'user1@example.com'`)
      await waitFor(() => shape.rows.size === before, 'the row leaving over SSE')
    })

    it('starts at offset=now with no history and receives what happens next', async () => {
      const shape = open({ table: 'projects', where: 'id > 1000000030' }, { offset: 'now' })
      await waitFor(() => shape.stream.current.phase === 'live', 'live after now')
      expect(shape.rows.size).toBe(0)
      const first = shape.stream.recorder.exchanges[0]
      expect(first?.request.url).toContain('offset=now')
      // With offset=now the shape's snapshot may still be running: a write it includes never reaches the log, so
      // the test writes again until one lands after it. An update of a row never received: the client keeps it.
      let polls = 0
      await waitFor(async () => {
        if (polls++ % 10 === 0) await sql(`UPDATE projects SET name = 'After now ${polls}' WHERE id = 1000000031`)
        return shape.rows.get('"public"."projects"/"1000000031"')?.name?.startsWith('After now')
      }, 'a change after now')
    })

    it('with log=changes_only skips the snapshot and ignores changes to rows it never saw', async () => {
      const shape = open({ table: 'projects', where: 'id > 1000000020', log: 'changes_only' })
      await waitFor(() => shape.stream.current.phase === 'live', 'live')
      expect(shape.rows.size).toBe(0)
      expect(shape.stream.recorder.exchanges[0]?.request.url).toContain('log=changes_only')
      const received: Message[] = []
      shape.subscribe((_changes, batch) => received.push(...batch.messages))
      await sql(`UPDATE projects SET name = 'Unseen' WHERE id = 1000000021`)
      await sql(
        `INSERT INTO projects (id, name, owner_id) SELECT 1000000500, 'Fresh', owner_id FROM projects WHERE id = 1000000021`
      )
      await waitFor(() => shape.rows.size === 1, 'the insert')
      expect(received.some((message) => isChangeMessage(message) && message.headers.operation === 'update')).toBe(true)
      expect([...shape.rows.values()].map((row) => row.name)).toEqual(['Fresh'])
      await sql(`DELETE FROM projects WHERE id = 1000000500`)
      await waitFor(() => shape.rows.size === 0, 'the delete')
    })

    it('with replica=full receives whole rows on update', async () => {
      const shape = open({ table: 'projects', where: 'id = 1000000010', replica: 'full' })
      await waitFor(() => shape.stream.current.phase === 'live', 'live')
      await sql(`UPDATE projects SET budget = 1.5 WHERE id = 1000000010`)
      const update = await waitFor(
        () =>
          shape.stream.recorder.entries.find(
            (entry) =>
              entry.type === 'message' && isChangeMessage(entry.message) && entry.message.headers.operation === 'update'
          ),
        'the full update'
      )
      expect(
        update.type === 'message' && isChangeMessage(update.message) && Object.keys(update.message.value).length
      ).toBeGreaterThan(3)
      expect(shape.rows.get('"public"."projects"/"1000000010"')?.budget).toBe('1.50')
    })

    for (const [live, first] of [
      ['long-poll', 11],
      ['sse', 14]
    ] as const) {
      it(`on must-refetch mid-stream (${live}) discards the rows and syncs again from -1 with the new handle`, async () => {
        const where = `id BETWEEN ${1000000000 + first} AND ${1000000002 + first}`
        const changed = `${1000000001 + first}`
        const shape = open({ table: 'projects', where }, { live })
        await waitFor(() => shape.stream.current.phase === 'live', 'live')
        const oldHandle = shape.stream.current.handle ?? ''
        const resets: number[] = []
        shape.subscribe((changes) => changes.forEach((change) => change.kind === 'reset' && resets.push(Date.now())))
        const query = new URLSearchParams({
          ...shapeParams(ShapeDraftSchema.parse({ table: 'projects', where })),
          handle: oldHandle
        })
        const deleted = await fetch(`${server.url}/v1/shape?${query}`, { method: 'DELETE' })
        expect(deleted.status).toBe(202)
        await sql(`UPDATE projects SET name = 'After refetch' WHERE id = ${changed}`)
        await waitFor(() => resets.length > 0 && shape.stream.current.phase === 'live', 'the restart')
        await waitFor(
          () => shape.rows.get(`"public"."projects"/"${changed}"`)?.name === 'After refetch',
          'the rows again'
        )
        expect(shape.rows.size).toBe(3)
        expect(shape.stream.current.handle).not.toBe(oldHandle)
        const conflict = shape.stream.recorder.exchanges.find((exchange) => exchange.response?.status === 409)
        // The 409 names the replacement handle when one exists by then (cached 60 s), else none (cached 1 s).
        const conflictHeaders = new Map(conflict?.response?.headers)
        const replacement = conflictHeaders.get(`${brand}-handle`)
        expect(conflictHeaders.get('cache-control')).toBe(`public, max-age=${replacement ? 60 : 1}, must-revalidate`)
        if (replacement) expect(shape.stream.current.handle).toBe(replacement)
        const restart = shape.stream.recorder.exchanges.filter((exchange) => exchange.request.url.includes('offset=-1'))
        expect(restart).toHaveLength(2)
        expect(restart[1]?.request.url).toContain('cache-buster=')
      })
    }
  })
}
