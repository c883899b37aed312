import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectClientsMatchPostgres, textPool } from '../support/converge'
import {
  type Message,
  type ShapeResponse,
  controls,
  get,
  materialiseStrictly,
  messages,
  shapeUrl
} from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

type Rows = Map<string, Record<string, string | null>>

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let server: TestShapeServer
/** Values as Postgres prints them, as the shape server sends them. */
let text: pg.Pool

const CREATE = "CREATE TABLE life (id int PRIMARY KEY, grp int NOT NULL, pad text DEFAULT repeat('p', 200))"
const FILL = 'INSERT INTO life (id, grp) SELECT g, g % 5 FROM generate_series(1, 8000) g'

beforeAll(async () => {
  server = await startTestShapeServer({ chunkBytes: 20_000, longPollTimeout: 1000 })
  text = textPool(server.databaseUrl)
  await server.pool.query(CREATE)
  await server.pool.query(FILL)
})

afterAll(async () => {
  await text.end()
  await server.close()
})

/**
 * A client as the protocol describes it, from -1 (or the answer to a -1 request already sent, `first`): live
 * long-polls, must-refetch restarts from -1; a table that is gone for a moment (DROP before CREATE) is asked again.
 * Every 5xx is recorded: none may happen.
 */
function follow(shape: Record<string, string>, signal: AbortSignal, first?: Promise<ShapeResponse>) {
  const rows: Rows = new Map()
  const anomalies: string[] = []
  let handle = ''
  let offset = '-1'
  let live = false
  let upToDate = false
  const apply = (list: Message[]) => materialiseStrictly(rows, list, anomalies)
  const restart = (next: string) => {
    rows.clear()
    handle = next
    offset = '-1'
    live = false
    upToDate = false
  }
  const done = (async () => {
    while (!signal.aborted) {
      const params: Record<string, string> = { ...shape, offset }
      if (offset !== '-1') params.handle = handle
      if (live) params.live = 'true'
      const asked = first ?? get(server.url, params, { signal })
      first = undefined
      const response = await asked.catch(() => null)
      if (!response) continue
      if (response.status >= 500) anomalies.push(`${response.status} ${response.text}`)
      if (response.status === 409) restart(response.header('@handle') ?? '')
      else if (response.status === 400 && response.text.includes('does not exist')) {
        restart('')
        await sleep(50)
      } else if (response.status !== 200) {
        anomalies.push(`${response.status} ${response.text}`)
        await sleep(100)
      } else {
        apply(messages(response))
        if (offset === '-1') handle = response.header('@handle') ?? ''
        offset = response.header('@offset') ?? offset
        if (controls(response).includes('up-to-date')) live = upToDate = true
      }
    }
  })().catch((error: unknown) => {
    if (!signal.aborted) anomalies.push(String(error))
  })
  return { shape, rows, anomalies, done, upToDate: () => upToDate }
}

async function expected(pool: pg.Pool, shape: Record<string, string>): Promise<Rows> {
  const { rows } = await pool.query<Record<string, string | null>>(`SELECT * FROM life WHERE ${shape.where ?? 'true'}`)
  return new Map(rows.map((row) => [`"public"."life"/"${row.id}"`, row]))
}

/** Random small transactions on `life` until stopped; failures while the table is gone or locked are expected. */
async function write(signal: AbortSignal, seed: number): Promise<void> {
  let state = seed
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state % n
  }
  while (!signal.aborted) {
    const id = 1 + random(9000)
    const kind = random(3)
    const sql =
      kind === 0
        ? 'INSERT INTO life (id, grp) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET grp = EXCLUDED.grp'
        : kind === 1
          ? 'UPDATE life SET grp = $2 WHERE id = $1'
          : 'DELETE FROM life WHERE id = $1 AND $2 >= 0'
    await server.pool.query(sql, [id, random(5)]).catch(() => undefined)
    await sleep(5)
  }
}

async function drop(shape: Record<string, string>): Promise<void> {
  const response = await fetch(shapeUrl(server.url, shape), { method: 'DELETE' })
  await response.text()
  // 404: the event found the shape already replaced (a refetching client had not created the new one yet)
  expect([202, 404]).toContain(response.status)
}

const LIVE_SHAPES: Array<Record<string, string>> = [
  { table: 'life', where: 'grp = 1' },
  { table: 'life', where: 'id % 7 = 3' },
  { table: 'life' }
]

let round = 0

/** What is done to the shapes' table (or to the shapes) while a snapshot is in flight and readers are live. */
const EVENTS: Array<[string, (inFlight: Record<string, string>, handle: Promise<string>) => Promise<void>]> = [
  [
    'DELETE',
    async (inFlight, handle) => {
      await drop({ ...inFlight, handle: await handle })
      for (const shape of LIVE_SHAPES) await drop(shape)
    }
  ],
  ['TRUNCATE', async () => void (await server.pool.query(`TRUNCATE life; ${FILL.replace('8000', '3000')}`))],
  [
    'ALTER TABLE … ADD COLUMN',
    async () => void (await server.pool.query(`ALTER TABLE life ADD COLUMN extra${round} text DEFAULT 'x'`))
  ],
  ['ALTER TABLE … DROP COLUMN', async () => void (await server.pool.query('ALTER TABLE life DROP COLUMN pad'))],
  [
    'DROP TABLE (and CREATE it again)',
    async () => void (await server.pool.query(`DROP TABLE life; ${CREATE}; ${FILL.replace('8000', '5000')}`))
  ]
]

/** Shape folders on disk that belong to no shape the server serves. */
async function strayFolders(): Promise<string[]> {
  const service = server.app.rooms.shapes.service()
  const folders = await readdir(join(server.dataDir, 'shapes', 'embedded', 'shapes'))
  return folders.filter((handle) => !service?.shapeByHandle(handle))
}

describe('a shape’s lifecycle against a snapshot in flight and live readers', () => {
  it.each(EVENTS)(
    '%s: every reader ends with exactly the rows of Postgres, no 5xx, no folder left behind',
    async (_, event) => {
      round += 1
      const controller = new AbortController()
      const readers = LIVE_SHAPES.map((shape) => follow(shape, controller.signal))
      await expect.poll(() => readers.every((reader) => reader.upToDate()), { timeout: 30_000 }).toBe(true)
      const writing = new AbortController()
      const writers = [write(writing.signal, round), write(writing.signal, round + 100)]
      // a new shape whose snapshot is being built when the event comes: right after the first chunk
      const inFlight = { table: 'life', where: `grp <> 1 AND id > ${round}` }
      const first = get(server.url, { ...inFlight, offset: '-1' })
      readers.push(follow(inFlight, controller.signal, first))
      await event(
        inFlight,
        first.then((response) => response.header('@handle') ?? '')
      )
      await sleep(300)
      writing.abort()
      await Promise.all(writers)
      // the readers that lived through it, and new ones from -1, all end with the rows of Postgres
      const fresh = LIVE_SHAPES.concat([inFlight]).map((shape) => follow(shape, controller.signal))
      try {
        await expectClientsMatchPostgres(text, [...readers, ...fresh], {
          rows: (reader) => reader.rows,
          expected: (pool, reader) => expected(pool, reader.shape),
          label: (reader) => JSON.stringify(reader.shape),
          timeout: 30_000
        })
      } finally {
        controller.abort()
        await Promise.all([...readers, ...fresh].map((reader) => reader.done))
      }
      for (const reader of [...readers, ...fresh]) expect(reader.anomalies, JSON.stringify(reader.shape)).toEqual([])
      await expect.poll(strayFolders, { timeout: 10_000, interval: 100 }).toEqual([])
    }
  )
})

describe('a table dropped and created again with the same name', () => {
  it('is never served from the old table after the drop, and the new one gets live changes', async () => {
    const controller = new AbortController()
    const shape = { table: 'again', where: 'id > 0' }
    await server.pool.query('CREATE TABLE again (id int PRIMARY KEY, label text NOT NULL)')
    await server.pool.query("INSERT INTO again SELECT g, 'old' FROM generate_series(1, 50) g")
    const reader = follow(shape, controller.signal)
    try {
      await expect.poll(() => reader.upToDate(), { timeout: 10_000 }).toBe(true)
      await server.pool.query('DROP TABLE again')
      // at once, not after a cache expired: the table is gone
      const gone = await get(server.url, { ...shape, offset: '-1' })
      expect(gone.status).toBe(400)
      expect(gone.text).toContain('does not exist')
      await server.pool.query('CREATE TABLE again (id int PRIMARY KEY, label text NOT NULL)')
      await server.pool.query("INSERT INTO again SELECT g, 'new' FROM generate_series(1, 3) g")
      const fresh = await get(server.url, { ...shape, offset: '-1' })
      expect(fresh.status).toBe(200)
      expect(messages(fresh).flatMap((message) => (message.key ? [message.value?.label] : []))).toEqual([
        'new',
        'new',
        'new'
      ])
      // live changes of the new table reach the reader that lived through the drop
      await server.pool.query("INSERT INTO again VALUES (4, 'live'); UPDATE again SET label = 'changed' WHERE id = 1")
      const want = new Map([
        ['"public"."again"/"1"', { id: '1', label: 'changed' }],
        ['"public"."again"/"2"', { id: '2', label: 'new' }],
        ['"public"."again"/"3"', { id: '3', label: 'new' }],
        ['"public"."again"/"4"', { id: '4', label: 'live' }]
      ])
      await expect.poll(() => reader.rows, { timeout: 10_000, interval: 50 }).toEqual(want)
      // and so does a table recreated while the server had no request for it in between
      await server.pool.query(
        "DROP TABLE again; CREATE TABLE again (id int PRIMARY KEY, label text NOT NULL); INSERT INTO again VALUES (7, 'third')"
      )
      await expect
        .poll(() => reader.rows, { timeout: 10_000, interval: 50 })
        .toEqual(new Map([['"public"."again"/"7"', { id: '7', label: 'third' }]]))
      await server.pool.query("INSERT INTO again VALUES (8, 'live again')")
      await expect
        .poll(() => reader.rows.get('"public"."again"/"8"'), { timeout: 10_000, interval: 50 })
        .toEqual({ id: '8', label: 'live again' })
    } finally {
      controller.abort()
      await reader.done
    }
    expect(reader.anomalies).toEqual([])
  })
})

describe('a table whose columns change', () => {
  it('sends the shapes on it and the subquery shapes that read it to refetch, and no other shape', async () => {
    await server.pool.query(`
      CREATE TABLE lc_projects (id int PRIMARY KEY, owner_id int NOT NULL);
      CREATE TABLE lc_issues (id int PRIMARY KEY, project_id int NOT NULL);
      CREATE TABLE lc_other (id int PRIMARY KEY);
      INSERT INTO lc_projects VALUES (1, 7), (2, 8);
      INSERT INTO lc_issues VALUES (1, 1), (2, 2);
      INSERT INTO lc_other VALUES (1)`)
    const shapes = {
      projects: { table: 'lc_projects' },
      subquery: { table: 'lc_issues', where: 'project_id IN (SELECT id FROM lc_projects WHERE owner_id = 7)' },
      other: { table: 'lc_other' }
    }
    const synced = Object.fromEntries(
      await Promise.all(
        Object.entries(shapes).map(async ([name, shape]) => {
          const response = await get(server.url, { ...shape, offset: '-1' })
          expect(response.status, name).toBe(200)
          return [name, { ...shape, handle: response.header('@handle'), offset: response.header('@offset') }]
        })
      )
    ) as Record<keyof typeof shapes, Record<string, string>>
    // the new columns reach the server with the table's next change (a Relation message)
    await server.pool.query('ALTER TABLE lc_projects ADD COLUMN label text')
    await server.pool.query("INSERT INTO lc_projects VALUES (3, 7, 'new'); INSERT INTO lc_other VALUES (2)")
    const status = async (name: keyof typeof shapes) => (await get(server.url, synced[name])).status
    await expect.poll(() => status('projects'), { timeout: 10_000, interval: 50 }).toBe(409)
    await expect.poll(() => status('subquery'), { timeout: 10_000, interval: 50 }).toBe(409)
    expect(await status('other')).toBe(200)
  })
})
