import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Shape, type MessageBatch, type ShapeStreamOptions, type SubsetMethod } from '../../src/shared/shape-client'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { startTestProxy, waitFor, type ProxyAction, type TestProxy } from './support'

const key = (id: number) => `"public"."issues"/"${id}"`

/** `ShapeStream.requestSnapshot` against the real server: rows into the shape, and the main stream deduplicated. */
describe('shape client: subset snapshots on a stream', () => {
  let server: TestShapeServer
  let proxy: TestProxy | null = null
  const shapes: Shape[] = []

  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: 'service', longPollTimeout: 1_000 })
  })
  afterEach(async () => {
    shapes.splice(0).forEach((shape) => shape.stop())
    await proxy?.close()
    proxy = null
  })
  afterAll(async () => server?.close())

  /** A stateless consumer: no history, full rows in every change (spec rule 5 of log=changes_only). */
  const openFresh = (project: number, options: Partial<ShapeStreamOptions> = {}) => {
    const shape = new Shape({
      url: `${server.url}/v1/shape`,
      params: { table: 'issues', where: `project_id = ${project}`, replica: 'full' },
      log: 'changes_only',
      offset: 'now',
      live: 'long-poll',
      ...options
    })
    shapes.push(shape)
    void shape.start()
    return shape
  }
  const live = (shape: Shape) =>
    waitFor(() => shape.stream.current.phase === 'live' && shape.stream.current.upToDate, 'the stream to go live')
  const titles = async (where: string) => {
    const { rows } = await server.pool.query<{ id: number; title: string }>(
      `SELECT id, title FROM issues WHERE ${where} ORDER BY id`
    )
    return rows.map((row) => [key(row.id), row.title])
  }
  const shapeTitles = (shape: Shape) =>
    [...shape.rows.entries()]
      .map(([rowKey, row]) => [rowKey, row.title])
      .sort(([a], [b]) => String(a).localeCompare(String(b), 'en', { numeric: true }))
  const notes = (shape: Shape) =>
    shape.stream.recorder.entries.flatMap((entry) => (entry.type === 'note' ? [entry.text] : []))

  it.each([
    ['POST', 1000000007],
    ['GET', 1000000008]
  ] as const)(
    'starts fresh at now with changes_only and ends with exactly the rows Postgres has (%s)',
    async (method: SubsetMethod, project) => {
      const shape = openFresh(project, { subsetMethod: method })
      const batches: MessageBatch[] = []
      shape.stream.subscribe((batch) => batches.push(batch))
      await live(shape)
      expect(shape.rows.size).toBe(0)

      const snapshot = await shape.requestSnapshot({})
      expect(snapshot.rows.length).toBeGreaterThan(0)
      expect(shapeTitles(shape)).toEqual(await titles(`project_id = ${project}`))
      // found by content: a live answer (a long-poll timing out) may be published after it before this line runs
      const published =
        batches.find((batch) => batch.messages.some((message) => message.headers.control === 'snapshot-end'))
          ?.messages ?? []
      expect(published.at(-1)).toEqual({ headers: { control: 'snapshot-end', ...snapshot.metadata } })
      expect(
        shape.stream.recorder.exchanges.find(
          (exchange) => exchange.request.url.includes('subset__') || exchange.request.method === 'POST'
        )?.request.method
      ).toBe(method)

      const [first] = snapshot.rows
      await server.pool.query(`UPDATE issues SET title = 'changed after the snapshot' WHERE id = $1`, [first?.value.id])
      await server.pool.query(`DELETE FROM issues WHERE id = (SELECT max(id) FROM issues WHERE project_id = $1)`, [
        project
      ])
      const expected = await titles(`project_id = ${project}`)
      await waitFor(
        () => JSON.stringify(shapeTitles(shape)) === JSON.stringify(expected),
        'the live changes to land on the snapshot rows'
      )
    }
  )

  it.each([
    ['POST', 1000000009],
    ['GET', 1000000010]
  ] as const)(
    'drops the change of a transaction the snapshot saw and applies one committed after it (%s)',
    async (method: SubsetMethod, project) => {
      let release: () => void = () => undefined
      let gate: Promise<void> | null = null
      // Holds every live answer while the gate is closed: the change committed before the snapshot reaches the stream after it.
      const gatedFetch: typeof fetch = async (input, init) => {
        const response = await fetch(input, init)
        if (gate && String(input).includes('live=true')) await gate
        return response
      }
      const shape = openFresh(project, { fetch: gatedFetch })
      await live(shape)
      const { rows } = await server.pool.query<{ id: number }>(
        'SELECT id FROM issues WHERE project_id = $1 ORDER BY id LIMIT 2',
        [project]
      )
      const [before, after] = rows.map((row) => row.id)
      gate = new Promise((resolve) => (release = resolve))

      await server.pool.query(`UPDATE issues SET title = 'seen by the snapshot' WHERE id = $1`, [before])
      const snapshot = await shape.requestSnapshot(
        { where: 'id = ANY($1::int[])', params: { '1': `{${before},${after}}` }, orderBy: 'id' },
        { method }
      )
      await server.pool.query(`UPDATE issues SET title = 'committed after the snapshot' WHERE id = $1`, [after])
      expect(snapshot.rows.map((row) => row.value.title)[0]).toBe('seen by the snapshot')
      release()
      gate = null

      const expected = await titles(`id IN (${before}, ${after})`)
      await waitFor(
        () => JSON.stringify(shapeTitles(shape)) === JSON.stringify(expected),
        'the later change to be applied'
      )
      expect(expected[1]?.[1]).toBe('committed after the snapshot')
      expect(snapshot.dropped.map((change) => [change.key, change.value.title])).toEqual([
        [key(before ?? 0), 'seen by the snapshot']
      ])
      expect(notes(shape).filter((note) => note.startsWith('dropped'))).toEqual([
        expect.stringContaining(`dropped the update of ${key(before ?? 0)} (transaction `) as string
      ])
    }
  )

  it('publishes the snapshot before the changes the stream received while it was in flight', async () => {
    const project = 1000000014
    const { rows } = await server.pool.query<{ id: number }>(
      'SELECT id FROM issues WHERE project_id = $1 ORDER BY id LIMIT 2',
      [project]
    )
    const [before, after] = rows.map((row) => row.id)
    let shape: Shape | null = null
    let release: () => void = () => undefined
    let gate: Promise<void> | null = null
    const received = (title: string) =>
      shape?.stream.recorder.entries.some(
        (entry) => entry.type === 'message' && 'value' in entry.message && entry.message.value.title === title
      )
    // Live answers wait while the gate is closed, so the change committed before the snapshot reaches the stream while
    // the subset is in flight; the subset's answer is held until the stream has also received a later change.
    const slowSubsetFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if (gate && String(input).includes('live=true')) await gate
      if (init?.method === 'POST') {
        release()
        gate = null
        await server.pool.query(`UPDATE issues SET title = 'committed while the subset was in flight' WHERE id = $1`, [
          after
        ])
        await waitFor(
          () => received('committed while the subset was in flight'),
          'the stream to receive the later change'
        )
      }
      return response
    }
    shape = openFresh(project, { fetch: slowSubsetFetch })
    await live(shape)
    gate = new Promise((resolve) => (release = resolve))
    await server.pool.query(`UPDATE issues SET title = 'seen by the snapshot' WHERE id = $1`, [before])
    const snapshot = await shape.requestSnapshot({ where: `id IN (${before}, ${after})` })

    expect(snapshot.rows.find((row) => row.value.id === String(after))?.value.title).not.toBe(
      'committed while the subset was in flight'
    )
    const expected = await titles(`id IN (${before}, ${after})`)
    await waitFor(() => JSON.stringify(shapeTitles(shape)) === JSON.stringify(expected), 'the rows to match Postgres')
    expect(snapshot.dropped.map((change) => change.key)).toEqual([key(before ?? 0)])
  })

  it('follows a 409 on the subset request: the stream restarts and the subset is fetched at the new handle', async () => {
    let refused = false
    const refuseFirstSubset = (request: { url: string }): ProxyAction => {
      if (refused || !request.url.includes('subset__')) return { kind: 'pass' }
      refused = true
      return {
        kind: 'respond',
        status: 409,
        headers: { 'service-handle': 'gone-elsewhere' },
        body: '[{"headers":{"control":"must-refetch"}}]'
      }
    }
    proxy = await startTestProxy(server.url, refuseFirstSubset)
    const shape = openFresh(1000000011, { url: proxy.url, subsetMethod: 'GET' })
    const controls: string[] = []
    shape.stream.subscribe((batch) =>
      batch.messages.forEach(
        (message) => 'control' in message.headers && controls.push(String(message.headers.control))
      )
    )
    await live(shape)

    const snapshot = await shape.requestSnapshot({ where: 'priority <= 2' })
    expect(controls).toEqual(expect.arrayContaining(['must-refetch', 'snapshot-end']))
    expect(controls.indexOf('must-refetch')).toBeLessThan(controls.indexOf('snapshot-end'))
    expect(shapeTitles(shape)).toEqual(await titles('project_id = 1000000011 AND priority <= 2'))
    expect(snapshot.rows.length).toBe(shape.rows.size)
    expect(notes(shape)).toEqual(expect.arrayContaining([expect.stringContaining('must-refetch') as string]))
  })

  it('asks onError about a 401 on the subset request and retries with what it answers', async () => {
    proxy = await startTestProxy(server.url, (request) =>
      request.url.includes('subset__') && request.headers['authorization'] !== 'Bearer fresh'
        ? { kind: 'respond', status: 401, body: '{"message":"token expired"}' }
        : { kind: 'pass' }
    )
    const asked: number[] = []
    const shape = openFresh(1000000012, {
      url: proxy.url,
      subsetMethod: 'GET',
      onError: (error) => (asked.push(error.status ?? 0), { headers: { authorization: 'Bearer fresh' } })
    })
    await live(shape)
    const snapshot = await shape.requestSnapshot({ where: 'priority = 1' })
    expect(asked).toEqual([401])
    expect(snapshot.rows.map((row) => row.key).sort()).toEqual([...shape.rows.keys()].sort())
  })

  it('surfaces a 414 for a GET subset too long for a URL, and the same subset succeeds as POST', async () => {
    const shape = openFresh(1000000013)
    await live(shape)
    const ids = Array.from({ length: 2_000 }, (_, index) => index + 1).join(', ')
    const subset = { where: `id IN (${ids})` }
    await expect(shape.requestSnapshot(subset, { method: 'GET' })).rejects.toMatchObject({
      status: 414,
      message: expect.stringContaining('POST') as string
    })
    const snapshot = await shape.requestSnapshot(subset, { method: 'POST' })
    expect(shapeTitles(shape)).toEqual(await titles('project_id = 1000000013 AND id <= 2000'))
    expect(snapshot.method).toBe('POST')
  })
})
