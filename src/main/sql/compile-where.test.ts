import { beforeAll, describe, expect, it } from 'vitest'
import { type ColumnTypes, WhereError, compileWhere, loadParser } from '.'

const columns: ColumnTypes = {
  id: { type: 'int4', category: 'number' },
  owner_id: { type: 'int8', category: 'number' },
  title: { type: 'text', category: 'text' },
  price: { type: 'numeric', category: 'number' },
  done: { type: 'bool', category: 'bool' },
  uid: { type: 'uuid', category: 'uuid' },
  created: { type: 'timestamptz', category: 'timestamp' },
  day: { type: 'date', category: 'date' },
  tags: { type: '_text', category: 'array', elementType: 'text' },
  status: { type: 'mood', category: 'enum', enumLabels: ['sad', 'ok', 'happy'] },
  meta: { type: 'jsonb', category: 'json' },
  secret: { type: 'text', category: 'text' },
  Mixed: { type: 'text', category: 'text' }
}

function compile(where: string, params: Record<string, string> = {}, allowedColumns?: readonly string[]) {
  return compileWhere(allowedColumns ? { where, params, columns, allowedColumns } : { where, params, columns })
}

function rejection(where: string, params: Record<string, string> = {}, allowedColumns?: readonly string[]): WhereError {
  try {
    compile(where, params, allowedColumns)
  } catch (error) {
    if (error instanceof WhereError) return error
    throw error
  }
  throw new Error(`accepted: ${where}`)
}

beforeAll(async () => {
  await loadParser()
})

describe('compileWhere: rejections', () => {
  it.each([
    ['1=1) OR (1=1', 4, 'syntax error at or near ")"'],
    ['1 x 1', 3, 'syntax error at or near "x"'],
    ["title = 'unterminated", 9, 'unterminated quoted string'],
    ['id = 1 /* open comment', 8, 'unterminated /* comment'],
    ['', 1, 'syntax error at end of input']
  ])('%s is a syntax error at its position', (where, position, message) => {
    const error = rejection(where)
    expect(error).toMatchObject({ param: 'where', position })
    expect(error.message).toContain(message)
  })

  it.each(['id=1; drop table x', 'id = 1;', 'id = 1; SELECT pg_sleep(5)'])('%s is more than one statement', (where) => {
    const error = rejection(where)
    expect(error.message).toContain('single expression')
    expect(where[(error.position ?? 0) - 1]).toBe(';')
  })

  it.each([
    ['id IN (SELECT id FROM other)', 'subqueries are not allowed'],
    ['EXISTS (SELECT 1 FROM pg_tables)', 'subqueries are not allowed'],
    ['id = (SELECT 1)', 'subqueries are not allowed'],
    ['other.id = 1', 'qualified column references'],
    ['t.id = 1', 'qualified column references'],
    ['nope = 1', 'unknown column "nope"'],
    ['xmin = 1', 'system column "xmin"'],
    ['ctid IS NULL', 'system column "ctid"'],
    ['pg_sleep(5) IS NULL', 'function pg_sleep() is not allowed'],
    ['now() > created', 'function now() is not allowed'],
    ['created < current_timestamp', 'not immutable'],
    ['random() < 0.5', 'function random() is not allowed'],
    ['public.lower(title) = title', 'function public.lower() is not allowed'],
    ['count(*) > 1', 'function count() is not allowed'],
    ['id = 1 ORDER BY id', 'other SQL clauses'],
    ['id = 1 UNION SELECT 1', 'other SQL clauses'],
    ['true GROUP BY id', 'other SQL clauses'],
    ['true LIMIT 1', 'other SQL clauses'],
    ['id', 'argument of WHERE must be type boolean, not type int4'],
    ['title COLLATE "C" < \'a\'', 'COLLATE is not supported'],
    ["status < 'ok'", 'only = and <>'],
    ["status = 'angry'", 'invalid input value for enum mood: "angry"'],
    ['price / 2 > 1', 'cast to float8'],
    ['id = title', 'operator does not exist: int4 = text'],
    ['created > now()::date', 'function now() is not allowed'],
    ["meta = '{}'", 'operator = is not supported for type jsonb'],
    ["title SIMILAR TO 'a'", 'SIMILAR TO is not supported'],
    ["title LIKE 'a' ESCAPE '!'", 'ESCAPE is not supported'],
    ['CASE WHEN done THEN true END', 'CASE is not supported'],
    ["id = 'abc'", 'invalid input syntax for type integer: "abc"'],
    ["day = '2024-02-30'", 'date/time field value out of range'],
    ['id::numeric(10,2) = 1', 'type modifiers are not supported'],
    ['id::regclass IS NULL', 'type regclass is not supported'],
    ['$0 = 1', 'there is no parameter $0']
  ])('%s → %s', (where, message) => {
    const error = rejection(where)
    expect(error.param).toBe('where')
    expect(error.message).toContain(message)
  })

  it('points at the offending node', () => {
    expect(rejection('id = 1 AND nope = 2').position).toBe(12)
    expect(rejection("title = 'a' OR pg_sleep(1) IS NULL").position).toBe(16)
  })

  it('names a missing, extra or invalid parameter', () => {
    expect(rejection('owner_id = $1')).toMatchObject({ param: 'params[1]', position: 12 })
    expect(rejection('owner_id = $1 OR id = $2', { 1: '1' }).message).toContain('params[2] is missing')
    expect(rejection('owner_id = $1', { 1: '1', 2: '2' })).toMatchObject({
      param: 'params',
      message: 'params[2] is not used: where has no $2'
    })
    expect(rejection('owner_id = $1', { 1: 'abc' })).toMatchObject({ param: 'params[1]' })
    expect(rejection('owner_id = $1', { 1: 'abc' }).message).toContain('invalid input syntax for type bigint: "abc"')
    expect(rejection('owner_id = $1', { one: '1' }).param).toBe('params')
  })

  it('with allowedColumns, other columns do not exist', () => {
    expect(rejection("secret = 'x'", {}, ['id', 'title']).message).toBe('unknown column "secret"')
    expect(compile("title = 'x'", {}, ['id', 'title']).referencedColumns).toEqual(['title'])
  })

  it('keeps quoted column names exact', () => {
    expect(compile(`"Mixed" = 'x'`).sql).toBe(`("Mixed" COLLATE "C" = 'x'::text)`)
    expect(rejection(`Mixed = 'x'`).message).toBe('unknown column "mixed"')
  })

  it('rejects deeply nested expressions with a clear error', () => {
    // within MAX_WHERE_LENGTH the parser's own depth limit ('memory exhausted') is out of reach
    expect(rejection(`${'id + '.repeat(3000)}1 > 0`).message).toContain('nested too deeply')
    expect(rejection(`${'NOT '.repeat(4000)}done`).message).toContain('nested too deeply')
  })

  it('rejects an over-long where without parsing it', () => {
    expect(rejection(`id = ${'1'.repeat(70_000)}`).message).toBe(
      'where is too long: 70,005 characters, at most 16,384 (MAX_WHERE_LENGTH)'
    )
  })
})

describe('compileWhere: safe SQL', () => {
  it('inlines params as typed literals and never copies user text', () => {
    expect(compile('owner_id = $1', { 1: '42' }).sql).toBe(`(owner_id = CAST('42' AS bigint))`)
    const injected = compile('title = $1', { 1: "x' OR '1'='1" })
    expect(injected.sql).toBe(`(title COLLATE "C" = 'x'' OR ''1''=''1'::text)`)
    expect(injected.matches({ title: "x' OR '1'='1" })).toBe(true)
    expect(injected.matches({ title: 'x' })).toBe(false)
  })

  it('drops comments and keeps a top-level OR inside its parentheses', () => {
    const compiled = compile("id = 1 OR title = 'a' -- AND secret = 'x'")
    expect(compiled.sql).toBe(`(id = '1'::int OR title COLLATE "C" = 'a'::text)`)
    expect(`${compiled.sql} AND (done)`).toContain(`'a'::text) AND`)
  })

  it('gives one canonical text to equivalent spellings', () => {
    const canonical = compile('owner_id = 5 AND title = $1', { 1: 'x' }).canonical
    expect(compile("  OWNER_ID=5   and (((title = 'x')))").canonical).toBe(canonical)
    expect(compile("owner_id = '5' AND title = 'x'::text").canonical).toBe(canonical)
    expect(compile("owner_id = 6 AND title = 'x'").canonical).not.toBe(canonical)
  })

  it('writes timestamptz literals as UTC instants so the session time zone does not matter', () => {
    expect(compile("created > '2024-01-01 12:00:00+02'").sql).toBe(
      `(created > CAST('2024-01-01 10:00:00+00' AS timestamp with time zone))`
    )
  })

  it('compares and folds text under the C collation', () => {
    expect(compile("lower(title) < 'b'").sql).toBe(`((lower(title COLLATE "C")) COLLATE "C" < 'b'::text)`)
  })
})

describe('compileWhere: evaluation', () => {
  it('uses three-valued logic', () => {
    const compiled = compile('NOT (id > 1)')
    expect(compiled.matches({ id: '1' })).toBe(true)
    expect(compiled.matches({ id: '2' })).toBe(false)
    expect(compiled.matches({ id: null })).toBe(false)
    expect(compile('id NOT IN (1, NULL)').matches({ id: '2' })).toBe(false)
    expect(compile('id IN (1, NULL)').matches({ id: '1' })).toBe(true)
    expect(compile('id > 1 OR true').matches({ id: null })).toBe(true)
    expect(compile('id IS DISTINCT FROM NULL').matches({ id: '1' })).toBe(true)
  })

  it('reads booleans in both snapshot (true/false) and replication (t/f) form', () => {
    const compiled = compile('done')
    expect(['t', 'true', 'f', 'false'].map((done) => compiled.matches({ done }))).toEqual([true, true, false, false])
  })

  it('compares numeric exactly, not as floats', () => {
    expect(compile('price = 0.3').matches({ price: '0.30' })).toBe(true)
    expect(compile('price * 3 = 0.3').matches({ price: '0.1' })).toBe(true)
    expect(compile('price > 12345678901234567890.1').matches({ price: '12345678901234567890.11' })).toBe(true)
    expect(compile('owner_id = 9223372036854775807').matches({ owner_id: '9223372036854775807' })).toBe(true)
    expect(compile('owner_id = 9223372036854775806').matches({ owner_id: '9223372036854775807' })).toBe(false)
  })

  it('compares uuids case-insensitively and timestamps as instants', () => {
    expect(
      compile("uid = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'").matches({ uid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' })
    ).toBe(true)
    const compiled = compile("created = '2024-01-01T10:00:00Z'")
    expect(compiled.matches({ created: '2024-01-01 10:00:00+00' })).toBe(true)
    expect(compiled.matches({ created: '2024-01-01 12:00:00+02' })).toBe(true)
    expect(compiled.matches({ created: '2024-01-01 10:00:00.000001+00' })).toBe(false)
  })

  it('does not match rows on which Postgres would raise an error', () => {
    expect(compile('10 / id > 1').matches({ id: '0' })).toBe(false)
    expect(compile('id * 2147483647 > 1').matches({ id: '2' })).toBe(false)
    expect(compile('title::int = 1').matches({ title: 'abc' })).toBe(false)
    expect(compile('title::int = 1').matches({ title: ' 0x1 ' })).toBe(true)
  })

  it('treats a row missing a referenced column as not matching', () => {
    expect(compile('id = 1').matches({})).toBe(false)
  })

  it('supports arrays', () => {
    expect(compile("tags @> '{a}'").matches({ tags: '{a,b}' })).toBe(true)
    expect(compile('tags && \'{x,"b"}\'').matches({ tags: '{a,b}' })).toBe(true)
    expect(compile("'c' = ANY(tags)").matches({ tags: '{a,b}' })).toBe(false)
    expect(compile("'c' = ANY(tags)").matches({ tags: '{a,NULL}' })).toBe(false)
    expect(compile("'c' <> ALL(tags)").matches({ tags: '{a,NULL}' })).toBe(false)
  })
})

describe('compileWhere: probes for the router', () => {
  /** Each alternative as text: its kind, what it admits, and the expression it reads (by its parse tree). */
  const probes = (where: string, params: Record<string, string> = {}): string[] | null =>
    compile(where, params).probes?.map((probe) => {
      const [type, tree] = JSON.parse(probe.value.key) as [{ kind: string }, unknown]
      const on = `${type.kind} ${JSON.stringify(tree).replace(/"/g, '')}`
      if (probe.kind === 'keys') return `keys ${probe.keys.join(',')} of ${on}`
      if (probe.kind === 'range') return `range ${probe.low}..${probe.high} of ${on}`
      if (probe.kind === 'contains') return `contains "${probe.literal}" of ${on}`
      return `null of ${on}`
    }) ?? null
  const column = (name: string) => `{ColumnRef:{fields:[{String:{sval:${name}}}]}}`

  it('checks equality keys, normalised per type, taking the most selective conjunct of an AND', () => {
    expect(probes("id = 1 AND owner_id IN (2, '3', 4.0)")).toEqual([`keys 1 of int ${column('id')}`])
    expect(probes("owner_id IN (2, '3')")).toEqual([
      `keys 2 of int ${column('owner_id')}`,
      `keys 3 of int ${column('owner_id')}`
    ])
    expect(probes("uid = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'")).toEqual([
      `keys a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 of uuid ${column('uid')}`
    ])
    expect(probes("done AND status = 'ok'")).toEqual([`keys ok of enum ${column('status')}`])
    expect(probes('done')).toEqual([`keys t of bool ${column('done')}`])
    expect(probes('NOT done')).toEqual([`keys f of bool ${column('done')}`])
    expect(probes("id = ANY('{5,6}')")).toEqual([`keys 5,6 of int ${column('id')}`])
  })

  it('checks ranges (intersected within an AND), LIKE literals, IS NULL and expressions', () => {
    expect(probes('id > 5')).toEqual([`range 5..Infinity of int ${column('id')}`])
    expect(probes('5 >= id')).toEqual([`range -Infinity..5 of int ${column('id')}`])
    expect(probes('id >= 1 AND id < 3 AND id <= 10')).toEqual([`range 1..3 of int ${column('id')}`])
    expect(probes('price BETWEEN 1.5 AND 2')).toEqual([`range 1.5..2 of numeric ${column('price')}`])
    expect(probes("title LIKE 'ab\\%c%de_f'")).toEqual([`contains "ab%c" of text ${column('title')}`])
    const lowered = probes("lower(title) LIKE '%abc%'")
    expect(lowered).toEqual(probes("title ILIKE '%ABC%'"))
    expect(lowered?.[0]).toMatch(/^contains "abc" of text .*lower/)
    expect(probes('title IS NULL')).toEqual([`null of text ${column('title')}`])
    expect(probes('id % 10 = 3')?.[0]).toMatch(/^keys 3 of int .*AEXPR_OP.*%/)
    expect(probes("id = 1 OR title LIKE 'x%'")).toEqual([
      `keys 1 of int ${column('id')}`,
      `contains "x" of text ${column('title')}`
    ])
  })

  it('has none where a row may match without passing a probe, and no alternative where no row can match', () => {
    for (const where of [
      'NOT (id = 1)',
      'id <> 1',
      "title NOT LIKE 'x%'",
      'id = 1 OR id <> 2',
      "title LIKE '%'",
      'id = owner_id',
      'title IS NOT NULL',
      'id NOT BETWEEN 1 AND 2',
      'done IS NOT FALSE'
    ]) {
      expect(probes(where), where).toBeNull()
    }
    expect(probes('id = NULL')).toEqual([])
  })
})
