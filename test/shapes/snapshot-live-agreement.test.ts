import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from '../support/postgres'
import { type Message, changes, get, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

/**
 * A shape's snapshot is chosen by Postgres (its SQL), its live changes by the evaluator. Both must pick the same rows
 * on a column whose collation is nondeterministic (ICU, case-insensitive: 'abc' = 'ABC' under it) and on a database
 * whose sessions read backslashes in '…' as escapes (standard_conforming_strings = off).
 */

const PEOPLE: Array<[number, string, string | null]> = [
  [1, 'abc', 'plain'],
  [2, 'ABC', 'a\\b'],
  [3, 'Abc', 'a\\\\b'],
  [4, 'abd', 'a_b'],
  [5, 'ß', 'a%b'],
  [6, 'SS', null],
  [7, 'xyz', 'x'],
  [8, 'XYZ', 'y']
]
/** Live copies of PEOPLE take their id plus this. */
const COPY = 100
/** A row every shape takes (its where is ORed with `id = MARKER`): once it arrives, so has its transaction. */
const MARKER = 999

const WHERES: Array<[string, number[]]> = [
  ["name = 'abc'", [1]],
  ["name <> 'abc'", [2, 3, 4, 5, 6, 7, 8]],
  ["name IN ('abc', 'ss')", [1]],
  ["name LIKE 'a%'", [1, 4]],
  ["name LIKE 'AB_'", [2]],
  ["name ILIKE 'abc'", [1, 2, 3]],
  ["name > 'ab'", [1, 4, 5, 7]],
  ["note = 'a\\b'", [2]],
  ["note LIKE 'a\\\\b'", [2]],
  ["note LIKE 'a\\_b'", [4]],
  ["note LIKE '%\\\\\\\\%'", [3]]
]

let postgres: TestPostgres
let pool: pg.Pool
let server: TestShapeServer

beforeAll(async () => {
  postgres = await startTestPostgres()
  pool = new pg.Pool({ connectionString: postgres.url, max: 2 })
  ignoreConnectionErrors(pool)
  await pool.query('ALTER SYSTEM SET standard_conforming_strings = off')
  await pool.query('SELECT pg_reload_conf()')
  await pool.query(
    `CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`
  )
  await pool.query('CREATE TABLE people (id int PRIMARY KEY, name text COLLATE case_insensitive, note text)')
  await pool.query('CREATE TABLE picks (id int PRIMARY KEY, name text COLLATE case_insensitive)')
  for (const row of PEOPLE) await pool.query('INSERT INTO people VALUES ($1, $2, $3)', row)
  await pool.query(`INSERT INTO picks VALUES (1, 'abc')`)
  server = await startTestShapeServer({ database: postgres.url })
}, 180_000)

afterAll(async () => {
  await server?.close()
  await pool?.end()
  await postgres?.destroy()
})

const idsOf = (list: readonly Message[]) =>
  list.filter((message) => message.headers.operation === 'insert').map((message) => Number(message.value?.id))

/** Follows a shape live from `offset` until a row with id `until` arrives; the ids inserted on the way. */
async function liveIds(shape: Record<string, string>, handle: string, offset: string, until: number) {
  const seen: number[] = []
  let at = offset
  while (!seen.includes(until)) {
    const response = await get(server.url, { ...shape, handle, offset: at, live: 'true' })
    expect(response.status, response.text).toBe(200)
    seen.push(...idsOf(changes(response)))
    at = response.header('@offset') ?? at
  }
  return { ids: seen.filter((id) => id !== until), offset: at }
}

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b)

describe('snapshot and live changes agree', () => {
  it('sessions of this database read backslashes as escapes (the setting the snapshot must pin)', async () => {
    const client = new pg.Client({ connectionString: postgres.url })
    await client.connect()
    const { rows } = await client.query<{ standard_conforming_strings: string }>('SHOW standard_conforming_strings')
    await client.end()
    expect(rows[0]?.standard_conforming_strings).toBe('off')
  })

  it('on a case-insensitive column and with standard_conforming_strings off, for =, <>, IN, LIKE, ILIKE, <', async () => {
    const synced = []
    for (const [where, expected] of WHERES) {
      const shape = { table: 'people', where: `(${where}) OR id = ${MARKER}` }
      const snapshot = await syncToEnd(server.url, shape)
      expect(sorted(idsOf(snapshot.messages)), `snapshot of ${where}`).toEqual(expected)
      synced.push({ where, expected, shape, ...snapshot })
    }
    await pool.query('BEGIN')
    for (const [id, name, note] of PEOPLE)
      await pool.query('INSERT INTO people VALUES ($1, $2, $3)', [id + COPY, name, note])
    await pool.query(`INSERT INTO people VALUES ($1, 'marker', NULL)`, [MARKER])
    await pool.query('COMMIT')
    for (const { where, expected, shape, handle, offset } of synced) {
      const { ids } = await liveIds(shape, handle, offset, MARKER)
      expect(sorted(ids.map((id) => id - COPY)), `live changes of ${where}`).toEqual(expected)
    }
  })

  it('for a subquery on case-insensitive columns: snapshot, live rows and move-ins', async () => {
    const shape = { table: 'people', where: 'name IN (SELECT name FROM picks)' }
    const snapshot = await syncToEnd(server.url, shape)
    expect(sorted(idsOf(snapshot.messages)), 'snapshot').toEqual([1, 1 + COPY])
    await pool.query(`INSERT INTO people VALUES (200, 'ABC', NULL), (201, 'abc', NULL)`)
    const live = await liveIds(shape, snapshot.handle, snapshot.offset, 201)
    expect(live.ids, 'live rows').toEqual([])
    // 'XYZ' moves in: of the people, only id 8 (and its copy) hold exactly that name
    await pool.query(`INSERT INTO picks VALUES (2, 'XYZ')`)
    const moved = await liveIds(shape, snapshot.handle, live.offset, 8)
    await pool.query(`INSERT INTO people VALUES (202, 'XYZ', NULL)`)
    const after = await liveIds(shape, snapshot.handle, moved.offset, 202)
    expect(sorted([...moved.ids, ...after.ids]), 'rows moved in').toEqual([8 + COPY])
  })
})
