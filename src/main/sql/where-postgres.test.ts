import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPostgres, type TestPostgres } from '../../../test/support/postgres'
import { readTableInfo } from '../shapes/definition/table-info'
import { type ColumnTypes, type CompiledWhere, compileWhere, createShapeRouter, loadParser } from '.'

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

/** A small deterministic generator (LCG), so that a failing case can be run again. */
function randomSource(seed: number) {
  let state = seed
  const next = (n: number): number => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state % n
  }
  return { next, pick: <T>(items: readonly T[]): T => items[next(items.length)] as T }
}

const RANDOM_ROWS = 300
const RANDOM_WHERES = 400
/** Characters that stress LIKE (wildcards, escapes), case folding (only ASCII folds) and code-point order. */
const ALPHABET = ['a', 'b', 'A', 'B', 'x', '_', '%', '\\', ' ', 'é', 'É', 'ｚ', '\uFFFD', '😀', '1']
const INTS = ['-3', '-1', '0', '1', '2', '7', '42', '999', '-1000']
const NUMERICS = ['0', '1.5', '1.50', '-0.001', '2.25', '100', '-7.125', 'NaN', '99999999999999.99']
const FLOATS = ['0', '-0', '0.5', '-1.5', '2.25', '1e10', 'Infinity', '-Infinity', 'NaN', '3']

describe('matches() agrees with Postgres on random rows, for every operator the compiler supports', () => {
  const random = randomSource(20_261_124)
  const text = (length = random.next(6)): string => Array.from({ length }, () => random.pick(ALPHABET)).join('')
  const maybeNull = (value: string): string | null => (random.next(8) === 0 ? null : value)
  const quote = (value: string): string => `'${value.replaceAll("'", "''")}'`
  /** A LIKE pattern: literal runs, %, _ and escapes, never ending in a lone escape character. */
  const pattern = (): string => {
    const parts = Array.from({ length: 1 + random.next(4) }, () =>
      random.pick(['%', '%', '_', '\\%', '\\_', '\\\\', text(1 + random.next(3))])
    )
    return parts
      .join('')
      .replaceAll('\\\\', '\\\\')
      .replace(/(^|[^\\])\\$/, '$1')
  }
  let randomColumns: ColumnTypes
  let randomRows: Record<string, string | null>[]

  const atoms: Array<() => string> = [
    () => `i ${random.pick(['=', '<>', '<', '<=', '>', '>='])} ${random.pick(INTS)}`,
    () => `big ${random.pick(['=', '<', '>='])} ${random.pick([...INTS, '9223372036854775807'])}`,
    () => `n ${random.pick(['=', '<>', '<', '>'])} ${random.pick(NUMERICS.filter((value) => value !== 'NaN'))}`,
    () => `n = 'NaN'`,
    () => `f ${random.pick(['=', '<', '>='])} ${quote(random.pick(FLOATS))}`,
    () => `t ${random.pick(['=', '<>', '<', '<=', '>', '>='])} ${quote(text())}`,
    () => `t ${random.pick(['<', '>=', '=', '<>'])} u`,
    () =>
      `i ${random.pick(['BETWEEN', 'NOT BETWEEN', 'BETWEEN SYMMETRIC'])} ${random.pick(INTS)} AND ${random.pick(INTS)}`,
    () => `i ${random.pick(['IN', 'NOT IN'])} (${random.pick(INTS)}, ${random.pick([...INTS, 'NULL'])})`,
    () => `t ${random.pick(['IN', 'NOT IN'])} (${quote(text())}, ${quote(text(1))})`,
    () => `t ${random.pick(['LIKE', 'NOT LIKE', 'ILIKE', 'NOT ILIKE'])} ${quote(pattern())}`,
    () => `u ${random.pick(['LIKE', 'ILIKE'])} t`,
    () =>
      `${random.pick(['lower', 'upper'])}(t) ${random.pick(['=', 'LIKE'])} ${random.pick(['lower', 'upper'])}(${quote(pattern())})`,
    () => `lower(t) = lower(u)`,
    () => `length(t) ${random.pick(['=', '>', '<'])} ${random.next(5)}`,
    () => `t || u ${random.pick(['=', '<'])} ${quote(text())}`,
    () => `coalesce(t, u, '') ${random.pick(['=', '>'])} ${quote(text(1))}`,
    () => `nullif(i, ${random.pick(INTS)}) IS NULL`,
    () => `i % ${random.pick(['2', '3', '-5', '7'])} = ${random.pick(['0', '1', '-1'])}`,
    () => `i ${random.pick(['+', '-', '*'])} ${random.pick(INTS)} > ${random.pick(INTS)}`,
    () => `abs(i) ${random.pick(['<', '='])} ${random.pick(INTS)}`,
    () => `- i < ${random.pick(INTS)}`,
    () => `n ${random.pick(['+', '-', '*'])} ${random.pick(['1', '0.5', '-2'])} > ${random.pick(['0', '1.5', '-1'])}`,
    () => `f * 2 > ${random.pick(['0', '1', '-3'])}`,
    () => `f ${random.pick(['<', '=', '>'])} n`,
    () => `i ${random.pick(['<', '=', '>'])} n`,
    () => `i::text ${random.pick(['=', 'LIKE'])} ${quote(random.pick(['1', '-%', '%2%', '0']))}`,
    () => `n::float8 > ${random.pick(['1', '0', '-1'])}`,
    () =>
      random.pick([
        'd',
        'NOT d',
        'd IS TRUE',
        'd IS NOT TRUE',
        'd IS FALSE',
        'd IS NOT FALSE',
        'd IS UNKNOWN',
        'd IS NOT UNKNOWN'
      ]),
    () => `d = ${random.pick(['true', 'false', "'t'", 'NULL'])}`,
    () => `${random.pick(['t', 'u', 'i', 'n', 'f', 'd', 'arr'])} IS ${random.pick(['', 'NOT '])}NULL`,
    () => `t IS ${random.pick(['', 'NOT '])}DISTINCT FROM u`,
    () => `day ${random.pick(['<', '=', '>='])} '2024-01-0${1 + random.next(3)}'`,
    () => `at ${random.pick(['<', '>'])} '2024-01-01 1${random.next(3)}:00:00+0${random.next(3)}'`,
    () => `${quote(text(1))} = ANY(arr)`,
    () => `${quote(text(1))} ${random.pick(['<', '<>'])} ALL(arr)`,
    () =>
      `arr ${random.pick(['@>', '<@', '&&'])} ${quote(`{${[text(1), text(1)].map((item) => `"${item.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`)}`
  ]
  const where = (depth = 0): string => {
    const choice = depth < 2 ? random.next(6) : 0
    if (choice === 3) return `(${where(depth + 1)}) AND (${where(depth + 1)})`
    if (choice === 4) return `(${where(depth + 1)}) OR (${where(depth + 1)})`
    if (choice === 5) return `NOT (${where(depth + 1)})`
    return random.pick(atoms)()
  }

  beforeAll(async () => {
    await client.query(
      'CREATE TABLE rnd (id int4 PRIMARY KEY, i int4, big int8, n numeric, f float8, t text, u text, d bool, day date, at timestamptz, arr text[])'
    )
    for (let id = 1; id <= RANDOM_ROWS; id++) {
      const arr = random.next(6) === 0 ? null : Array.from({ length: random.next(3) }, () => text(1))
      await client.query('INSERT INTO rnd VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)', [
        id,
        maybeNull(random.pick(INTS)),
        maybeNull(random.pick([...INTS, '9223372036854775807', '-9223372036854775808'])),
        maybeNull(random.pick(NUMERICS)),
        maybeNull(random.pick(FLOATS)),
        maybeNull(text()),
        maybeNull(text()),
        maybeNull(random.pick(['t', 'f'])),
        maybeNull(`2024-01-0${1 + random.next(3)}`),
        maybeNull(`2024-01-01 1${random.next(3)}:00:00+0${random.next(3)}`),
        arr
      ])
    }
    randomColumns = (await readTableInfo(client, 'public', 'rnd')).columnTypes
    const selectList = Object.keys(randomColumns)
      .map((name) => `"${name}"::text AS "${name}"`)
      .join(', ')
    randomRows = (await client.query<Record<string, string | null>>(`SELECT ${selectList} FROM rnd ORDER BY rnd.id`))
      .rows
  })

  it(`${RANDOM_WHERES} random wheres over ${RANDOM_ROWS} random rows; the router agrees for changed rows`, async () => {
    const router = createShapeRouter<number>()
    const compiled: CompiledWhere[] = []
    for (let i = 0; i < RANDOM_WHERES; i++) {
      const text = where()
      const shape = compileWhere({ where: text, params: {}, columns: randomColumns })
      const { rows: result } = await client.query<{ m: boolean | null }>(
        `SELECT (${shape.sql}) AS m FROM rnd ORDER BY id`
      )
      const expected = result.map((row) => row.m === true)
      expect(
        randomRows.map((row) => shape.matches(row)),
        text
      ).toEqual(expected)
      compiled.push(shape)
      router.add(String(i), 'rnd', shape, i)
    }
    // Pairs of versions differing in one column or in all: routeChange must equal matching each version alone.
    for (let k = 0; k < 200; k++) {
      const old = random.pick(randomRows)
      const other = random.pick(randomRows)
      const column = random.pick(Object.keys(randomColumns).filter((name) => name !== 'id'))
      const next = k % 2 === 0 ? { ...old, [column]: other[column] ?? null } : { ...other, id: old.id ?? null }
      const expected = compiled.flatMap((shape, i) => {
        const [was, is] = [shape.matches(old), shape.matches(next)]
        return was || is ? [{ value: i, old: was, new: is }] : []
      })
      const routed = router.routeChange('rnd', old, next).sort((a, b) => a.value - b.value)
      expect(routed).toEqual(expected)
    }
  }, 120_000)
})

/** Pieces of LIKE patterns: wildcards, escapes, letters that ILIKE folds and that it does not, code points above U+FFFF. */
const PATTERN_PIECES = ['a', 'A', '_', '%', '\\_', '\\%', '\\\\', '\\a', 'é', 'É', '😀', 'ß']
const LIKE_VALUES = [
  '',
  'a',
  'A',
  'aa',
  'ab',
  '_',
  '%',
  '\\',
  'a_',
  'a%',
  'é',
  'É',
  'éa',
  '😀',
  'a😀a',
  '😀😀',
  'ßa',
  'aAa'
]

describe('LIKE and ILIKE agree with Postgres (COLLATE "C") for every pattern of up to three pieces', () => {
  const patterns = [['']]
  for (let length = 1; length <= 3; length++)
    for (const prefix of patterns.filter((pattern) => pattern.length === length - 1))
      for (const piece of PATTERN_PIECES) patterns.push([...prefix, piece])
  const random = randomSource(4_242)
  // long patterns: segments longer than the 32 atoms of one word of the bit-parallel scan
  const long = Array.from({ length: 60 }, () => {
    const segment = () => Array.from({ length: 20 + random.next(60) }, () => random.pick(['a', 'b', '_'])).join('')
    return `${random.pick(['', '%'])}${segment()}%${segment()}${random.pick(['', '%', 'b'])}`
  })
  const longValues = Array.from({ length: 40 }, () =>
    Array.from({ length: random.next(300) }, () => random.pick(['a', 'b', 'a', 'é'])).join('')
  )

  it.each([
    { what: 'short patterns', patterns: patterns.map((pieces) => pieces.join('')), values: LIKE_VALUES },
    { what: 'long patterns with _', patterns: long, values: longValues }
  ])('$what, constant and read from the row', async ({ patterns: texts, values }) => {
    const { rows: expected } = await client.query<{ i: string; j: string; like: boolean; ilike: boolean }>(
      `SELECT p.i, v.j, v.t COLLATE "C" LIKE p.pat AS like, v.t COLLATE "C" ILIKE p.pat AS ilike
       FROM unnest($1::text[]) WITH ORDINALITY p(pat, i), unnest($2::text[]) WITH ORDINALITY v(t, j) ORDER BY p.i, v.j`,
      [texts, values]
    )
    const text = { t: { type: 'text', category: 'text' }, p: { type: 'text', category: 'text' } } as const
    const perRow = {
      like: compileWhere({ where: 't LIKE p', params: {}, columns: text }),
      ilike: compileWhere({ where: 't ILIKE p', params: {}, columns: text })
    }
    const actual = texts.flatMap((pattern) => {
      const constant = (operator: string) =>
        compileWhere({ where: `t ${operator} $1`, params: { 1: pattern }, columns: text })
      const [like, ilike] = [constant('LIKE'), constant('ILIKE')]
      return values.map((t, j) => {
        const row = { t, p: pattern }
        expect(perRow.like.matches(row)).toBe(like.matches(row))
        expect(perRow.ilike.matches(row)).toBe(ilike.matches(row))
        return {
          i: String(texts.indexOf(pattern) + 1),
          j: String(j + 1),
          like: like.matches(row),
          ilike: ilike.matches(row)
        }
      })
    })
    expect(actual).toEqual(expected)
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
