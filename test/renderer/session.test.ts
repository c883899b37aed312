import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { ShapeDraftSchema, type Row } from '../../src/shared/shape-client'
import { WorkbenchSession, type SessionConfig } from '../../src/renderer/features/shapes/session'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

// The workbench runs in the renderer: its views re-render at most once per animation frame.
const frames = { count: 0 }
vi.stubGlobal('requestAnimationFrame', (callback: (at: number) => void) => {
  frames.count += 1
  return setTimeout(() => callback(performance.now()), 16)
})

let server: TestShapeServer
const sessions: WorkbenchSession[] = []
let nextGroup = 0

beforeAll(async () => {
  server = await startTestShapeServer({ longPollTimeout: 2_000 })
  await server.pool.query('CREATE TABLE ws_items (id int PRIMARY KEY, grp int NOT NULL, title text)')
})
afterEach(() => sessions.splice(0).forEach((session) => session.stop()))
afterAll(async () => server?.close())

const key = (id: number) => `"public"."ws_items"/"${id}"`
const sql = (text: string, values: unknown[] = []) => server.pool.query(text, values)

/** A session on its own group of ws_items rows, started and synced to its end. */
async function startSession(options: Partial<SessionConfig> = {}): Promise<{ session: WorkbenchSession; grp: number }> {
  const grp = ++nextGroup
  const session = new WorkbenchSession({
    url: `${server.url}/v1/shape`,
    definition: ShapeDraftSchema.parse({ table: 'ws_items', where: `grp = ${grp}` }),
    headers: {},
    params: { table: 'ws_items', where: `grp = ${grp}` },
    live: 'long-poll',
    offset: '-1',
    clients: 1,
    ...options
  })
  sessions.push(session)
  session.start()
  await vi.waitFor(() => expect(session.shape.stream.current.upToDate).toBe(true), { timeout: 15_000 })
  return { session, grp }
}

describe('a workbench session follows its shape and remembers what each change did', () => {
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
    const { session, grp } = await startSession()
    for (const statement of statements(grp)) await sql(statement)
    const expected = { insert: 0, update: 0, delete: 0, reset: 0, ...counts }
    await vi.waitFor(() => expect(session.counts).toEqual(expected), { timeout: 15_000 })
    for (const [offset, kind] of Object.entries(flashes))
      expect(session.flashes.get(key(grp * 100 + Number(offset)))?.kind).toBe(kind)
  })

  it('keeps each update’s row as it was before, for the log’s diff', async () => {
    const { session, grp } = await startSession()
    const id = grp * 100 + 1
    await sql(`INSERT INTO ws_items VALUES (${id}, ${grp}, 'first')`)
    await sql(`UPDATE ws_items SET title = 'second' WHERE id = ${id}`)
    await sql(`UPDATE ws_items SET title = 'third' WHERE id = ${id}`)
    await vi.waitFor(() => expect(session.counts.update).toBe(2), { timeout: 15_000 })
    const updates = session.recorder.entries.flatMap((entry) =>
      entry.type === 'message' && entry.message.headers.operation === 'update' ? [entry.message] : []
    )
    expect(updates.map((message) => (session.before.get(message) as Row | undefined)?.title)).toEqual([
      'first',
      'second'
    ])
  })

  it('bumps its version at most once per frame, however many changes a response brings', async () => {
    const { session, grp } = await startSession()
    let heard = 0
    const unsubscribe = session.subscribe(() => (heard += 1))
    const before = session.getVersion()
    const framesBefore = frames.count
    await sql(
      `INSERT INTO ws_items SELECT g, ${grp}, 'bulk' FROM generate_series(${grp * 100 + 1}, ${grp * 100 + 99}) g`
    )
    await vi.waitFor(() => expect(session.counts.insert).toBe(99), { timeout: 15_000 })
    await vi.waitFor(() => expect(session.getVersion()).toBeGreaterThan(before), { timeout: 15_000 })
    unsubscribe()
    expect(heard).toBe(session.getVersion() - before)
    // never more than one bump per frame asked for, and far fewer than the 99 changes that came in one response
    expect(session.getVersion() - before).toBeLessThanOrEqual(frames.count - framesBefore)
    expect(session.getVersion() - before).toBeLessThan(99)
  })

  it('runs identical clients of the shape, each with its own recorder, the first one’s rows shown', async () => {
    const { session, grp } = await startSession({ clients: 3 })
    expect(session.recorders).toHaveLength(3)
    expect(session.recorders[0]).toBe(session.recorder)
    await sql(`INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'seen by all')`)
    await vi.waitFor(() => expect(session.shape.rows.get(key(grp * 100 + 1))?.title).toBe('seen by all'), {
      timeout: 15_000
    })
    for (const recorder of session.recorders) {
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

describe('Drop shape', () => {
  it('DELETEs the shape with its handle: every client refetches (a reset) and ends with the same rows', async () => {
    const { session, grp } = await startSession({ clients: 2 })
    await sql(`INSERT INTO ws_items VALUES (${grp * 100 + 1}, ${grp}, 'kept')`)
    await vi.waitFor(() => expect(session.counts.insert).toBe(1), { timeout: 15_000 })
    const handle = session.shape.stream.current.handle
    await session.drop()
    const notes = session.recorder.entries.flatMap((entry) => (entry.type === 'note' ? [entry] : []))
    expect(notes.at(-1)).toMatchObject({ level: 'info', text: `Drop shape: DELETE ${handle} answered 202` })
    // the reset empties the rows (and their flashes); the new shape's snapshot brings the row in again
    await vi.waitFor(
      () => {
        expect(session.counts).toMatchObject({ reset: 1, insert: 2 })
        expect(session.shape.stream.current.handle).not.toBe(handle)
        expect([...session.shape.rows.keys()]).toEqual([key(grp * 100 + 1)])
      },
      { timeout: 15_000 }
    )
    for (const stream of session.companions)
      await vi.waitFor(() => expect(stream.current.handle).not.toBe(handle), { timeout: 15_000 })
  })

  it('says what the server answered when it refuses, in the log and as the error', async () => {
    const session = new WorkbenchSession({
      url: `${server.url}/v1/shape`,
      definition: ShapeDraftSchema.parse({ table: 'no_such_table' }),
      headers: {},
      params: { table: 'no_such_table' },
      live: 'long-poll',
      offset: '-1',
      clients: 1
    })
    const failure = await session.drop().catch((error: unknown) => error as Error)
    expect(failure).toBeInstanceOf(Error)
    expect(failure?.message).toMatch(/^DELETE \/v1\/shape answered 4\d\d: /)
    const note = session.recorder.entries.find((entry) => entry.type === 'note')
    expect(note).toMatchObject({
      level: 'error',
      text: expect.stringMatching(/^Drop shape: DELETE \(no handle yet\) answered 4\d\d /)
    })
  })
})
