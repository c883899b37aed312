import { beforeAll, describe, expect, it } from 'vitest'
import {
  type ColumnTypes,
  type CompiledWhere,
  type Row,
  compileWhere,
  createShapeRouter,
  loadParser
} from '../../src/main/sql'

/**
 * The router's probes may only ever narrow the shapes it evaluates: for random wheres of every probe kind and random
 * changes (values at the edges: NULL, NaN, ±Infinity, -0, integers past 2^53, non-ASCII text, LIKE metacharacters),
 * the routed shapes must be exactly those whose where matches the old or the new row.
 */
const columns: ColumnTypes = {
  id: { type: 'int4', category: 'number' },
  big: { type: 'int8', category: 'number' },
  price: { type: 'numeric', category: 'number' },
  score: { type: 'float8', category: 'number' },
  title: { type: 'text', category: 'text' },
  note: { type: 'text', category: 'text' },
  done: { type: 'bool', category: 'bool' },
  day: { type: 'date', category: 'date' },
  at: { type: 'timestamptz', category: 'timestamp' },
  uid: { type: 'uuid', category: 'uuid' }
}

const VALUES: Record<string, ReadonlyArray<string | null>> = {
  id: ['0', '1', '2', '7', '-3', '100', '2147483647', null],
  big: ['9007199254740993', '9007199254740992', '-1', '0', '42', null],
  price: ['0', '1.5', '1.50', '-2.25', '1e3', 'NaN', 'Infinity', '-Infinity', '99999.999', null],
  score: ['0', '-0', '1.5', 'NaN', 'Infinity', '-Infinity', '3.25', '1e300', null],
  title: [
    'apple',
    'Apple pie',
    'APPLE',
    'tag7 end',
    'task-7 tag7 end',
    '100%',
    'a_b',
    'İstanbul',
    'K-value',
    'emoji 😀 here',
    '',
    null
  ],
  note: ['x', 'n1', null, null],
  done: ['t', 'f', null],
  day: ['2024-01-01', '2024-02-29', 'infinity', '-infinity', '1999-12-31', null],
  at: ['2024-01-01 00:00:00+00', '2024-01-01 12:30:00.5+00', 'infinity', '-infinity', null],
  uid: ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12', null]
}

/** A small deterministic generator, so that a failure reproduces. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

const quote = (text: string): string => `'${text.replaceAll("'", "''")}'`

function whereGenerator(next: () => number) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T
  const constant = (column: string): string => {
    const value = pick(VALUES[column] ?? []) ?? 'NULL'
    return value === 'NULL' || ['id', 'big'].includes(column) ? value : quote(value)
  }
  const pattern = (): string =>
    quote(
      pick([
        '%pp%',
        'app%',
        '%end',
        'tag7 %',
        '%TAG7 %',
        '%7 e%',
        '100\\%',
        '%\\_%',
        'a_b',
        '_pple%',
        '%😀%',
        '%',
        'İ%',
        '%k-%',
        'apple'
      ])
    )
  const numeric = ['id', 'big', 'price', 'score', 'day', 'at']
  const atoms: Array<() => string> = [
    () => {
      const column = pick(Object.keys(columns).filter((name) => name !== 'done'))
      return `${column} ${pick(['=', '<>', '<', '<=', '>', '>='])} ${constant(column)}`
    },
    () => {
      const column = pick(numeric)
      return `${constant(column)} ${pick(['<', '>=', '='])} ${column}`
    },
    () => {
      const column = pick(numeric)
      return `${column} ${pick(['BETWEEN', 'BETWEEN SYMMETRIC', 'NOT BETWEEN'])} ${constant(column)} AND ${constant(column)}`
    },
    () => {
      const column = pick(['id', 'price', 'title', 'uid'])
      return `${column} ${pick(['IN', 'NOT IN'])} (${constant(column)}, ${constant(column)})`
    },
    () => `id = ANY('{${pick(['1,2', '7', '0,NULL'])}}')`,
    () => `id % ${pick(['3', '5'])} = ${pick(['0', '1', '2'])}`,
    () => `abs(price) > ${pick(['1', '2.25', '0'])}`,
    () =>
      `${pick(['title', 'lower(title)', 'upper(title)', 'note'])} ${pick(['LIKE', 'ILIKE', 'NOT LIKE'])} ${pattern()}`,
    () => `${pick(['title', 'note', 'price', 'day'])} IS ${pick(['NULL', 'NOT NULL'])}`,
    () => pick(['done', 'NOT done', 'done IS TRUE', 'done IS NOT FALSE', 'done = false'])
  ]
  const condition = (depth: number): string => {
    if (depth > 1 || next() < 0.5) return (pick(atoms) as () => string)()
    const [left, right] = [condition(depth + 1), condition(depth + 1)]
    return pick([`(${left}) AND (${right})`, `(${left}) OR (${right})`, `NOT ((${left}) AND (${right}))`])
  }
  return () => condition(0)
}

function randomRow(next: () => number): Row {
  return Object.fromEntries(
    Object.entries(VALUES).map(([column, values]) => [column, values[Math.floor(next() * values.length)] ?? null])
  )
}

beforeAll(async () => {
  await loadParser()
})

describe('router probes', () => {
  it('route exactly the shapes whose where matches the old or new row, for random wheres and changes', () => {
    const next = random(20261124)
    const nextWhere = whereGenerator(next)
    const shapes: Array<{ where: string; compiled: CompiledWhere }> = []
    while (shapes.length < 600) {
      const where = nextWhere()
      try {
        shapes.push({ where, compiled: compileWhere({ where, params: {}, columns }) })
      } catch {
        // a combination the evaluator refuses (a type mismatch): not a shape
      }
    }
    expect(shapes.filter(({ compiled }) => compiled.probes !== null).length).toBeGreaterThan(300)
    const router = createShapeRouter<number>()
    shapes.forEach(({ compiled }, i) => router.add(String(i), 'items', compiled, i))
    for (let change = 0; change < 1_500; change++) {
      const kind = change % 5
      const old = kind === 0 ? null : randomRow(next)
      const row = kind === 1 ? null : randomRow(next)
      const routed = router
        .routeChange('items', old, row)
        .map((r) => `${r.value}:${r.old}:${r.new}`)
        .sort()
      const expected = shapes
        .map(({ compiled }, i) => ({
          i,
          old: old !== null && compiled.matches(old),
          new: row !== null && compiled.matches(row)
        }))
        .filter((r) => r.old || r.new)
        .map((r) => `${r.i}:${r.old}:${r.new}`)
        .sort()
      if (routed.join() !== expected.join()) {
        const missed = expected.filter((e) => !routed.includes(e)).map((e) => shapes[Number(e.split(':')[0])]?.where)
        expect({ old, row, missed, extra: routed.filter((r) => !expected.includes(r)) }).toBeUndefined()
      }
    }
  })

  it('evaluates far fewer wheres than a scan of all shapes', () => {
    const next = random(7)
    const router = createShapeRouter<number>()
    let evaluations = 0
    for (let i = 0; i < 2_000; i++) {
      const where = [
        `title LIKE '%tag${i} %'`,
        `price BETWEEN ${i * 20} AND ${i * 20 + 5}`,
        `id % 1000 = ${i % 1000} OR upper(title) LIKE '%TAG${i} END'`,
        `note IS NULL AND big = ${i}`
      ][i % 4] as string
      const compiled = compileWhere({ where, params: {}, columns })
      router.add(
        String(i),
        'items',
        { ...compiled, matchesValues: (values) => (evaluations++, compiled.matchesValues(values)) },
        i
      )
    }
    const row = (): Row => {
      const k = Math.floor(next() * 4000)
      return {
        id: String(k),
        big: String(k % 500),
        price: String(k * 10),
        score: '0',
        title: `task-${k} tag${k} end`,
        note: k % 2 ? null : 'n',
        done: 't',
        day: null,
        at: null,
        uid: null
      }
    }
    for (let change = 0; change < 100; change++) router.routeChange('items', row(), row())
    expect(evaluations / 100).toBeLessThan(100)
  })
})
