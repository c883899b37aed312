import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPostgres, type TestPostgres } from '../support/postgres'
import { readTableInfo } from '../../src/main/shapes/definition/table-info'
import { type ColumnTypes, type CompiledWhere, compileWhere, createShapeRouter, loadParser } from '../../src/main/sql'

const SCHEMA = `
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE t (
  id int4 PRIMARY KEY, small int2, big int8, price numeric, score float8, r float4,
  title text, name varchar(40), done bool, uid uuid, created timestamptz, day date, ts timestamp,
  tags text[], nums int4[], status mood, meta jsonb
);
INSERT INTO t VALUES
  (1, 1, 10, 1.50, 0.5, 0.1, 'apple', 'Alice', true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-01 10:00:00+00', '2024-01-01', '2024-01-01 10:00:00', '{red,green}', '{1,2,3}', 'happy', '{"a": 1}'),
  (2, -5, 9223372036854775807, 2.25, -1.5, 2.5, 'Banana', 'bob', false, 'B0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12', '2024-06-30 23:59:59.999999+00', '2024-06-30', '2024-06-30 23:59:59.5', '{blue}', '{4}', 'sad', '[1, 2]'),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (4, 32767, -1, 0, 0, 0, 'Éclair', 'éva', true, '00000000-0000-0000-0000-000000000000', '1999-12-31 23:00:00-05', '1999-12-31', '1999-12-31 23:00:00', '{}', '{}', 'ok', 'null'),
  (5, 2, 2, 1.5000, 1e300, 1e-30, 'a_b%c', 'a_b%c', false, 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'infinity', 'infinity', '-infinity', '{"with space",NULL}', '{NULL,5}', 'happy', '{}'),
  (6, 3, 3, -7.125, 'NaN', 'Infinity', 'zed', 'Zed', true, 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', '2024-01-01 09:59:59+00', '0044-03-15 BC', '2024-01-01 00:00:00', '{red}', '{3,3}', 'ok', '{"a": 2}'),
  (7, 0, 0, 'NaN', 3, 3, '', '', NULL, NULL, '2024-01-01 10:00:00.5+00', '2024-02-29', NULL, '{RED,Green}', '{10,20}', 'sad', NULL),
  (8, 100, 12345678901, 100, 100, 100, 'apple pie', 'Apple', true, 'd0eebc99-9c0b-4ef8-bb6d-6bb9bd380a14', '2023-12-31 23:59:59+00', '2023-12-31', '2023-12-31 23:59:59', '{a,b,c}', '{1}', 'happy', '{"b": true}'),
  (9, -32768, -9223372036854775808, 99999999999999999999.99, -0.0, -0.5, 'O''Brien', 'o''brien', false, 'e0eebc99-9c0b-4ef8-bb6d-6bb9bd380a15', '2024-03-10 02:30:00+01', '2024-03-10', '2024-03-10 02:30:00', '{"O''Brien"}', '{-1}', 'ok', '1'),
  (10, 10, 10, 10, 10.0, 10, 'apple', 'ALICE', true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-01 11:00:00+01', '2024-01-01', '2024-01-01 10:00:00', '{red,green}', '{1,2,3}', 'happy', '{"a": 1}');
`

/** [where, params] pairs that Postgres and the evaluator must agree on. */
const CASES: readonly (readonly [string, Record<string, string>?])[] = [
  ['id = 1'],
  ['id = $1', { 1: '2' }],
  ["id = '3'"],
  ['id = 1.0 OR id = 2.5'],
  ['id IN (1, 2, 3.0, NULL)'],
  ['id NOT IN (1, 2)'],
  ['id NOT IN (1, NULL)'],
  ['small > 1 AND small < 100'],
  ['small BETWEEN 0 AND 10'],
  ['small NOT BETWEEN SYMMETRIC 10 AND 0'],
  ['big > 2147483647'],
  ['big = 9223372036854775807'],
  ['price > 1.5'],
  ['price = 1.5'],
  ['price >= 2 OR price < 0'],
  ['price * 2 = 3'],
  ['price + 0.01 > 2.25'],
  ["price = 'NaN'"],
  ['score > 0.4'],
  ['score = 0'],
  ['r = 0.1'],
  ['r > 0.09 AND r < 0.11'],
  ['score * 2 > 1'],
  ['id % 3 = 1 AND id / 3 = 1'],
  ['- id > -3'],
  ['abs(price) > 2 OR abs(id - 5) < 2'],
  ['price * price > 2 OR price % 2 = 1'],
  ["title = 'apple'"],
  ["title < 'b'"],
  ["title >= 'Z' AND title <= 'a'"],
  ["title LIKE 'a%'"],
  ["title LIKE 'a\\_b\\%c'"],
  ["title NOT LIKE '%e'"],
  ["title ILIKE 'APPLE%'"],
  ["title ILIKE 'éclair'"],
  ["title LIKE 'app%ple' OR title LIKE 'a%a%'"],
  ["title LIKE '%' AND title NOT LIKE ''"],
  ["title ILIKE 'A%E' OR title ILIKE '%P%P%'"],
  ["title LIKE '%\\%%' OR name LIKE 'a\\_%'"],
  ["lower(title) = 'banana' OR upper(name) = 'ALICE'"],
  ['length(title) > 5'],
  ["title || '!' = 'apple!'"],
  ["coalesce(title, 'none') = 'none'"],
  ['nullif(small, 1) IS NULL'],
  ['title IS NULL'],
  ['name IS NOT NULL AND name <> title'],
  ['title IS DISTINCT FROM name'],
  ['done'],
  ['NOT done'],
  ['done IS NOT TRUE'],
  ['done IS UNKNOWN'],
  ['done = false OR done IS NULL'],
  ["uid = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'"],
  ["uid > 'c0000000-0000-0000-0000-000000000000'"],
  ["created > '2024-01-01'"],
  ["created = '2024-01-01 10:00:00Z'"],
  ["created BETWEEN '2024-01-01T00:00:00+00' AND '2024-12-31 23:59:59+00'"],
  ["created > '2024-01-01 11:00:00+02'"],
  ["created < 'infinity'"],
  ["day = '2024-01-01'"],
  ["day < '1000-01-01'"],
  ["day >= '2024-02-29' AND day < 'infinity'"],
  ["ts > '2024-01-01'"],
  ['ts = day'],
  ['day::timestamp < ts'],
  ["tags @> '{red}'"],
  ["tags && ARRAY['blue', 'a']"],
  ["tags <@ '{red,green,blue}'"],
  ["'with space' = ANY(tags)"],
  ['3 = ANY(nums)'],
  ['5 <> ALL(nums)'],
  ["'b' < ANY(tags)"],
  ["title > ALL(ARRAY['B', 'a'])"],
  ["id = ANY('{1,4,7}')"],
  ["status = 'happy'"],
  ["status IN ('ok', 'sad')"],
  ["status::text < 'p'"],
  ['meta IS NULL'],
  ['meta::text = \'{"a": 1}\''],
  ["small::text = '1' OR big::text LIKE '9%'"],
  ['price::float8 > 2'],
  ['r::float8 > 0.1'],
  ['(id * 0.5)::int = 2'],
  ['id::numeric = 1'],
  ["'1'::int = small"],
  ['done::int = 1'],
  ["(id = 1 OR id = 2) AND (title LIKE 'a%' OR done)"],
  ['NOT (id > 5 OR small IS NULL)'],
  ['$1', { 1: 'true' }],
  ['title = $1 AND id = $2', { 1: "O'Brien", 2: '9' }],
  ['title = $1', { 1: "x' OR '1'='1" }]
]

let database: TestPostgres
let client: pg.Client
let columns: ColumnTypes
let rows: Record<string, string | null>[]

beforeAll(async () => {
  await loadParser()
  database = await startTestPostgres()
  client = new pg.Client({ connectionString: database.url })
  await client.connect()
  await client.query(`SET TimeZone = 'UTC'; SET DateStyle = 'ISO, DMY'; SET extra_float_digits = 1`)
  await client.query(SCHEMA)
  columns = (await readTableInfo(client, 'public', 't')).columnTypes
  const names = Object.keys(columns)
  const selectList = names.map((name) => `"${name}"::text AS "${name}"`).join(', ')
  rows = (await client.query<Record<string, string | null>>(`SELECT ${selectList} FROM t ORDER BY t.id`)).rows
})

afterAll(async () => {
  await client?.end()
  await database?.destroy()
})

describe('matches() agrees with Postgres', () => {
  it('reads the column types from the catalog', () => {
    expect(columns.id).toEqual({ type: 'int4', category: 'number' })
    expect(columns.status).toEqual({ type: 'mood', category: 'enum', enumLabels: ['sad', 'ok', 'happy'] })
    expect(columns.tags).toEqual({ type: '_text', category: 'array', elementType: 'text' })
    expect(columns.meta?.category).toBe('json')
  })

  it.each(CASES.map(([where, params]) => ({ where, params: params ?? {} })))('$where', async ({ where, params }) => {
    const compiled = compileWhere({ where, params, columns })
    const expected = (
      await client.query<{ id: number }>(`SELECT id FROM t WHERE ${compiled.sql} ORDER BY id`)
    ).rows.map((row) => row.id)
    const actual = rows.filter((row) => compiled.matches(row)).map((row) => Number(row.id))
    expect(actual).toEqual(expected)
  })

  it('routes every row to exactly the shapes whose where matches it', () => {
    const router = createShapeRouter<string>()
    const compiled = new Map<string, CompiledWhere>()
    CASES.forEach(([where, params = {}], index) => {
      const shape = compileWhere({ where, params, columns })
      compiled.set(String(index), shape)
      router.add(String(index), 't', shape, String(index))
    })
    for (const row of rows) {
      const expected = [...compiled].filter(([, shape]) => shape.matches(row)).map(([id]) => id)
      expect(router.route('t', row).sort()).toEqual(expected.sort())
    }
  })

  it('generated SQL still means the same when run from a session in another time zone', async () => {
    await client.query(`SET TimeZone = 'America/New_York'`)
    try {
      const compiled = compileWhere({ where: "created > '2024-01-01 09:59:59'", params: {}, columns })
      const ids = (await client.query<{ id: number }>(`SELECT id FROM t WHERE ${compiled.sql} ORDER BY id`)).rows.map(
        (row) => row.id
      )
      expect(ids).toEqual(rows.filter((row) => compiled.matches(row)).map((row) => Number(row.id)))
    } finally {
      await client.query(`SET TimeZone = 'UTC'`)
    }
  })
})

describe('generated SQL compares text as the evaluator does on columns with a nondeterministic collation', () => {
  let ciColumns: ColumnTypes
  let ciRows: Record<string, string | null>[]
  beforeAll(async () => {
    await client.query(`
      CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
      CREATE TABLE ci (id int4 PRIMARY KEY, t text COLLATE case_insensitive, u varchar(20) COLLATE case_insensitive,
                       tags text[] COLLATE case_insensitive);
      INSERT INTO ci VALUES (1, 'abc', 'ABC', '{abc,x}'), (2, 'ABC', 'abc', '{ABC}'), (3, 'Abc', NULL, '{}'),
        (4, 'abd', 'abd', '{abd,ABC}'), (5, 'ß', 'SS', '{ß}'), (6, 'a%c', 'A%C', '{a%c}'), (7, NULL, 'x', NULL)`)
    ciColumns = (await readTableInfo(client, 'public', 'ci')).columnTypes
    ciRows = (
      await client.query<Record<string, string | null>>('SELECT id::text, t, u, tags::text FROM ci ORDER BY id')
    ).rows
  })

  it.each([
    "t = 'abc'",
    "t <> 'abc'",
    "'ABC' = t",
    "t IN ('abc', 'x')",
    "t NOT IN ('abc')",
    't = u',
    't IS DISTINCT FROM u',
    't IS NOT DISTINCT FROM u',
    "nullif(t, 'abc') IS NULL",
    "t = ANY(ARRAY['abc', 'abd'])",
    "t <> ALL('{abc}')",
    "'abc' = ANY(tags)",
    "tags @> '{abc}'",
    "tags <@ '{abc,x,ABC}'",
    "tags && ARRAY['ABC']",
    "t LIKE 'a%'",
    "t LIKE 'AB_'",
    "t NOT LIKE '%c'",
    't LIKE u',
    "t ILIKE 'abc'",
    "t < 'b'",
    "t BETWEEN 'a' AND 'b'",
    "lower(t) = 'abc'",
    "t || 'x' = 'abcx'",
    "t = 'ss' OR u = 'ss'"
  ])('%s', async (where) => {
    const compiled = compileWhere({ where, params: {}, columns: ciColumns })
    const expected = (
      await client.query<{ id: number }>(`SELECT id FROM ci WHERE ${compiled.sql} ORDER BY id`)
    ).rows.map((row) => row.id)
    expect(ciRows.filter((row) => compiled.matches(row)).map((row) => Number(row.id))).toEqual(expected)
  })
})
