import { beforeAll, describe, expect, it } from 'vitest'
import { useTestDatabase } from '../support/test-database'
import { readTableInfo } from '../../src/main/shapes/definition/table-info'
import { type ColumnTypes, type CompiledWhere, compileWhere, createShapeRouter, loadParser } from '../../src/main/sql'

/**
 * The evaluator against Postgres on generated inputs: random wheres over every operator on random rows, and LIKE/ILIKE
 * for every short pattern and long ones (the fixed cases, the router and collations are in where-postgres.test.ts).
 */

// the session settings of where-postgres.test.ts, on every connection of the pool
const database = useTestDatabase([], {
  pool: { options: '-c TimeZone=UTC -c DateStyle=ISO,DMY -c extra_float_digits=1' }
})

beforeAll(async () => {
  await loadParser()
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
    await database.pool.query(
      'CREATE TABLE rnd (id int4 PRIMARY KEY, i int4, big int8, n numeric, f float8, t text, u text, d bool, day date, at timestamptz, arr text[])'
    )
    for (let id = 1; id <= RANDOM_ROWS; id++) {
      const arr = random.next(6) === 0 ? null : Array.from({ length: random.next(3) }, () => text(1))
      await database.pool.query('INSERT INTO rnd VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)', [
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
    randomColumns = (await readTableInfo(database.pool, 'public', 'rnd')).columnTypes
    const selectList = Object.keys(randomColumns)
      .map((name) => `"${name}"::text AS "${name}"`)
      .join(', ')
    randomRows = (
      await database.pool.query<Record<string, string | null>>(`SELECT ${selectList} FROM rnd ORDER BY rnd.id`)
    ).rows
  })

  it(`${RANDOM_WHERES} random wheres over ${RANDOM_ROWS} random rows; the router agrees for changed rows`, async () => {
    const router = createShapeRouter<number>()
    const compiled: CompiledWhere[] = []
    for (let i = 0; i < RANDOM_WHERES; i++) {
      const text = where()
      const shape = compileWhere({ where: text, params: {}, columns: randomColumns })
      const { rows: result } = await database.pool.query<{ m: boolean | null }>(
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
    const { rows: expected } = await database.pool.query<{ i: string; j: string; like: boolean; ilike: boolean }>(
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
