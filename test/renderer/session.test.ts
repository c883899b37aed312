import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { ShapeDraftSchema, type Row } from '../../src/shared/shape-client'
import { WorkbenchEngine, type EngineOptions } from '../../src/renderer/features/shapes/engine/engine'
import { EngineHost } from '../../src/renderer/features/shapes/engine/host'
import { percentiles, type Percentiles } from '../../src/renderer/features/shapes/engine/latency'
import type { LogView, Port, RowsView } from '../../src/renderer/features/shapes/engine/protocol'
import { WorkbenchSession, type SessionConfig } from '../../src/renderer/features/shapes/session'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

// The page's side of a session re-renders its views at most once per animation frame.
const frames = { count: 0 }
vi.stubGlobal('requestAnimationFrame', (callback: (at: number) => void) => {
  frames.count += 1
  return setTimeout(() => callback(performance.now()), 16)
})

let server: TestShapeServer
const running: Array<{ stop(): void }> = []
let nextGroup = 0

beforeAll(async () => {
  server = await startTestShapeServer({ longPollTimeout: 2_000 })
  await server.pool.query('CREATE TABLE ws_items (id int PRIMARY KEY, grp int NOT NULL, title text)')
})
afterEach(() => running.splice(0).forEach((session) => session.stop()))
afterAll(async () => server?.close())

const key = (id: number) => `"public"."ws_items"/"${id}"`
const sql = (text: string, values: unknown[] = []) => server.pool.query(text, values)

function configFor(grp: number, options: Partial<SessionConfig> = {}): SessionConfig {
  return {
    url: `${server.url}/v1/shape`,
    definition: ShapeDraftSchema.parse({ table: 'ws_items', where: `grp = ${grp}` }),
    headers: {},
    params: { table: 'ws_items', where: `grp = ${grp}` },
    live: 'long-poll',
    offset: '-1',
    clients: 1,
    commitTimes: { url: `${server.url}/v1/debug/commit-times`, params: {} },
    ...options
  }
}

/**
 * The engine (what runs in the workbench's worker) on its own group of ws_items rows, started and synced to its end.
 */
async function startEngine(options: Partial<EngineOptions> = {}): Promise<{ engine: WorkbenchEngine; grp: number }> {
  const grp = ++nextGroup
  const engine = new WorkbenchEngine({ ...configFor(grp), commitTimes: null, ...options } as EngineOptions)
  running.push(engine)
  engine.start()
  await vi.waitFor(() => expect(engine.stream.current.upToDate).toBe(true), { timeout: 15_000 })
  return { engine, grp }
}

/** The page's side of a session, its engine behind a MessageChannel (in the app: a worker). */
function openSession(config: SessionConfig): WorkbenchSession {
  const channel = new MessageChannel()
  new EngineHost(channel.port1 as unknown as Port)
  const session = new WorkbenchSession(config, {
    port: channel.port2 as unknown as Port,
    end: () => {
      channel.port1.close()
      channel.port2.close()
    }
  })
  running.push({ stop: () => session.end() })
  return session
}

/** Every row key of the engine, in the order the table shows them. */
const keysOf = (engine: WorkbenchEngine) =>
  Array.from({ length: engine.rows.size }, (_, index) => engine.rows.rowAt(index)?.key)

describe('a workbench engine follows its shape and remembers what each change did', () => {
  it.each<[string, (grp: number) => string[], Record<string, number>, Record<number, 'insert' | 'update' | undefined>]>(
    [
      [
        'one insert',
        (grp) => [`INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'a')`],
        { insert: 1 },
        { 1: 'insert' }
      ],
      [
        'an insert, then an update of it: the row flashes as updated',
        (grp) => [
          `INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'a')`,
          `UPDATE ws_items SET title = 'b' WHERE id = ${grp * 100 + 1}`
        ],
        { insert: 1, update: 1 },
        { 1: 'update' }
      ],
      [
        'an insert, then its delete: no flash is left for a row that is gone',
        (grp) => [
          `INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'a'), (${grp * 100 + 2}, ${grp}, 'b')`,
          `DELETE FROM ws_items WHERE id = ${grp * 100 + 1}`
        ],
        { insert: 2, delete: 1 },
        { 1: undefined, 2: 'insert' }
      ],
      [
        'a row that moves out of the where is a delete',
        (grp) => [
          `INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'a')`,
          `UPDATE ws_items SET grp = -1 WHERE id = ${grp * 100 + 1}`
        ],
        { insert: 1, delete: 1 },
        { 1: undefined }
      ]
    ]
  )('%s', async (_, statements, counts, flashes) => {
    const { engine, grp } = await startEngine()
    for (const statement of statements(grp)) await sql(statement)
    const expected = { insert: 0, update: 0, delete: 0, reset: 0, ...counts }
    await vi.waitFor(() => expect(engine.counts).toEqual(expected), { timeout: 15_000 })
    for (const [offset, kind] of Object.entries(flashes))
      expect(engine.flashOf(key(grp * 100 + Number(offset)))?.kind).toBe(kind)
  })

  it('keeps each update’s row as it was before, for the log’s diff', async () => {
    const { engine, grp } = await startEngine()
    const id = grp * 100 + 1
    await sql(`INSERT INTO ws_items VALUES (${id}, ${grp}, 'first')`)
    await sql(`UPDATE ws_items SET title = 'second' WHERE id = ${id}`)
    await sql(`UPDATE ws_items SET title = 'third' WHERE id = ${id}`)
    await vi.waitFor(() => expect(engine.counts.update).toBe(2), { timeout: 15_000 })
    const updates = engine.recorder.entries.flatMap((entry) =>
      entry.type === 'message' && entry.message.headers.operation === 'update' ? [entry.message] : []
    )
    expect(updates.map((message) => (engine.before.get(message) as Row | undefined)?.title)).toEqual([
      'first',
      'second'
    ])
  })

  it('runs identical clients of the shape, each with its own recorder, the first one’s rows shown', async () => {
    const { engine, grp } = await startEngine({ clients: 3 })
    expect(engine.recorders).toHaveLength(3)
    expect(engine.recorders[0]).toBe(engine.recorder)
    await sql(`INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'seen by all')`)
    await vi.waitFor(() => expect(engine.rows.get(key(grp * 100 + 1))?.title).toBe('seen by all'), {
      timeout: 15_000
    })
    for (const recorder of engine.recorders) {
      await vi.waitFor(
        () =>
          expect(
            recorder.entries.some((entry) => entry.type === 'message' && entry.message.headers.operation === 'insert')
          ).toBe(true),
        { timeout: 15_000 }
      )
    }
  })
})

describe('the page’s side of a session, its engine behind a message channel', () => {
  it('bumps its version at most once per frame, however many changes a response brings', async () => {
    const grp = ++nextGroup
    const session = openSession(configFor(grp))
    await vi.waitFor(() => expect(session.summary?.state.upToDate).toBe(true), { timeout: 15_000 })
    let heard = 0
    const unsubscribe = session.subscribe(() => (heard += 1))
    const before = session.getVersion()
    const framesBefore = frames.count
    await sql(
      `INSERT INTO ws_items SELECT g, ${grp}, 'bulk' FROM generate_series(${grp * 100 + 1}, ${grp * 100 + 99}) g`
    )
    await vi.waitFor(() => expect(session.summary?.counts.insert).toBe(99), { timeout: 15_000 })
    unsubscribe()
    expect(heard).toBe(session.getVersion() - before)
    // never more than one bump per frame asked for, and far fewer than the 99 changes that came in one response
    expect(session.getVersion() - before).toBeLessThanOrEqual(frames.count - framesBefore)
    expect(session.getVersion() - before).toBeLessThan(99)
  })

  it('gets the rows in view and the log as filtered and searched, not the whole shape', async () => {
    const grp = ++nextGroup
    await sql(
      `INSERT INTO ws_items SELECT g, ${grp}, 'row ' || g FROM generate_series(${grp * 100 + 1}, ${grp * 100 + 50}) g`
    )
    const session = openSession(configFor(grp))
    session.showView('rows', { kind: 'rows', start: 10, end: 15 })
    session.showView('log', { kind: 'log', filter: 'update', search: 'renamed', start: 0, end: 100 })
    await vi.waitFor(() => expect(session.summary?.state.phase).toBe('live'), { timeout: 15_000 })
    await sql(`UPDATE ws_items SET title = 'renamed' WHERE id = ${grp * 100 + 12}`)
    await sql(`UPDATE ws_items SET title = 'other' WHERE id = ${grp * 100 + 13}`)
    await vi.waitFor(
      () => {
        const log = session.view('log') as LogView | undefined
        expect(log?.rows.map((row) => row.type === 'message' && row.key)).toEqual([key(grp * 100 + 12)])
        expect(log?.rows[0]).toMatchObject({
          kind: 'update',
          detail: { type: 'diff', changes: [{ column: 'title', before: `row ${grp * 100 + 12}`, after: 'renamed' }] }
        })
      },
      { timeout: 15_000 }
    )
    const rows = session.view('rows') as RowsView
    expect(rows).toMatchObject({ total: 50, start: 10 })
    expect(rows.columns.map((column) => column.name)).toEqual(['id', 'grp', 'title'])
    expect(rows.rows.map((row) => row.cells[0])).toEqual(
      ['11', '12', '13', '14', '15'].map((n) => String(grp * 100 + Number(n)))
    )
    expect(rows.rows[1]).toMatchObject({
      cells: [String(grp * 100 + 12), String(grp), 'renamed'],
      mark: { kind: 'update' }
    })
  })

  it('resolves a header function on the page for each request, and asks the page’s onError on a 4xx', async () => {
    const grp = ++nextGroup
    let asked = 0
    const errors: number[] = []
    const session = openSession(
      configFor(grp, {
        headers: { 'x-asked': () => String(++asked) },
        // a table that does not exist: 400, onError answers once with new params, then gives up
        params: { table: 'no_such_table' },
        onError: (error) => {
          errors.push(error.status ?? 0)
          return errors.length === 1 ? { params: { table: () => 'ws_items', where: `grp = ${grp}` } } : undefined
        }
      })
    )
    await vi.waitFor(() => expect(session.summary?.state.phase).toBe('live'), { timeout: 15_000 })
    expect(errors).toEqual([400])
    expect(asked).toBeGreaterThanOrEqual(2)
    const recording = await session.recording()
    expect(
      recording.exchanges.map((exchange) => exchange.request.headers.find(([name]) => name === 'x-asked')?.[1])
    ).toEqual(recording.exchanges.map((_, index) => String(index + 1)))
  })
})

describe('latency: commit → server append → this client, per transaction', () => {
  it('times every transaction committed while live, by joining the server’s commit times with its arrivals', async () => {
    const grp = ++nextGroup
    const { engine } = await startEngine({
      ...configFor(grp),
      commitTimes: { url: `${server.url}/v1/debug/commit-times`, params: {} }
    })
    await vi.waitFor(() => expect(engine.stream.current.phase).toBe('live'), { timeout: 15_000 })
    for (let n = 1; n <= 12; n += 1) await sql(`INSERT INTO ws_items VALUES (${grp * 100 + n}, ${grp}, 'timed')`)
    await vi.waitFor(() => expect(engine.latency.view().transactions).toBe(12), { timeout: 15_000 })
    const view = engine.latency.view()
    expect(view.status.state).toBe('ok')
    expect(view.liveMessages).toBe(12)
    expect(view.chart.x).toHaveLength(12)
    expect(view.rate.messages.reduce((sum, count) => sum + count, 0)).toBe(12)
    for (const leg of [view.stats.append, view.stats.client]) {
      expect(leg).not.toBeNull()
      const { p50, p95, p99, max } = leg as Percentiles
      expect(p50).toBeLessThanOrEqual(p95)
      expect(p95).toBeLessThanOrEqual(p99)
      expect(p99).toBeLessThanOrEqual(max)
      expect(max).toBeLessThan(15_000)
    }
    // the change reaches the client after the server appended it (both clocks are this machine's)
    expect((view.stats.client as Percentiles).p50).toBeGreaterThanOrEqual((view.stats.append as Percentiles).p50 - 1)
  })

  it('says why there are no times when the server does not tell them', async () => {
    const { engine } = await startEngine({ commitTimes: { url: `${server.url}/v1/no-such-endpoint`, params: {} } })
    await sql(`INSERT INTO ws_items VALUES (${nextGroup * 100 + 1}, ${nextGroup}, 'untimed')`)
    await vi.waitFor(() => expect(engine.latency.view().status.state).toBe('unavailable'), { timeout: 15_000 })
    expect(engine.latency.view().status.message).toMatch(/does not tell commit times/)
  })

  it('reads percentiles by nearest rank', () => {
    expect(percentiles([])).toBeNull()
    expect(percentiles([5])).toEqual({ p50: 5, p95: 5, p99: 5, max: 5 })
    const hundred = Array.from({ length: 100 }, (_, index) => 100 - index)
    expect(percentiles(hundred)).toEqual({ p50: 50, p95: 95, p99: 99, max: 100 })
  })
})

describe('Drop shape', () => {
  it('DELETEs the shape with its handle: every client refetches (a reset) and ends with the same rows', async () => {
    const { engine, grp } = await startEngine({ clients: 2 })
    await sql(`INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'kept')`)
    await vi.waitFor(() => expect(engine.counts.insert).toBe(1), { timeout: 15_000 })
    const handle = engine.stream.current.handle
    await engine.drop()
    const notes = engine.recorder.entries.flatMap((entry) => (entry.type === 'note' ? [entry] : []))
    expect(notes.at(-1)).toMatchObject({ level: 'info', text: `Drop shape: DELETE ${handle} answered 202` })
    // the reset empties the rows (and their flashes); the new shape's snapshot brings the row in again
    await vi.waitFor(
      () => {
        expect(engine.counts).toMatchObject({ reset: 1, insert: 2 })
        expect(engine.stream.current.handle).not.toBe(handle)
        expect(keysOf(engine)).toEqual([key(grp * 100 + 1)])
      },
      { timeout: 15_000 }
    )
    for (const stream of engine.companions)
      await vi.waitFor(() => expect(stream.current.handle).not.toBe(handle), { timeout: 15_000 })
  })

  it('says what the server answered when it refuses, in the log and as the error (also through the page’s side)', async () => {
    const config = {
      ...configFor(0),
      definition: ShapeDraftSchema.parse({ table: 'no_such_table' }),
      params: { table: 'no_such_table' }
    }
    const engine = new WorkbenchEngine({ ...config, commitTimes: null })
    const failure = await engine.drop().catch((error: unknown) => error as Error)
    expect(failure).toBeInstanceOf(Error)
    expect(failure?.message).toMatch(/^DELETE \/v1\/shape answered 4\d\d: /)
    const note = engine.recorder.entries.find((entry) => entry.type === 'note')
    expect(note).toMatchObject({
      level: 'error',
      text: expect.stringMatching(/^Drop shape: DELETE \(no handle yet\) answered 4\d\d /)
    })
    const session = openSession({ ...config, live: 'off' })
    await expect(session.drop()).rejects.toThrow(/^DELETE \/v1\/shape answered 4\d\d: /)
  })
})
