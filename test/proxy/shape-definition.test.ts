import { beforeAll, describe, expect, it } from 'vitest'
import { loadParser } from '../../src/main/sql'
import {
  canonicaliseShape,
  parseColumnList,
  shapeClaim,
  shapeDifferences,
  shapeFromClaim,
  shapeKey,
  type ShapeDefinitionError,
  tableText,
  upstreamShapeParams
} from '../../src/main/proxy/shape-definition'
import { conjoin, parseWhere } from '../../src/main/proxy/where-tree'

beforeAll(() => loadParser())

const key = (definition: Parameters<typeof canonicaliseShape>[0]) => shapeKey(canonicaliseShape(definition))

describe('canonical shapes', () => {
  it('treats every spelling of one relation as one table', () => {
    const expected = key({ table: 'issues' })
    for (const table of ['ISSUES', 'public.issues', '"issues"', '"public"."issues"', 'Public."issues"'])
      expect(key({ table })).toBe(expected)
    expect(key({ table: '"Issues"' })).not.toBe(expected)
    expect(key({ table: 'other.issues' })).not.toBe(expected)
  })

  it('ignores column order and identifier spelling, but not quoted case', () => {
    const expected = key({ table: 'issues', columns: ['id', 'title'] })
    expect(key({ table: 'issues', columns: ['"title"', 'ID'] })).toBe(expected)
    expect(key({ table: 'issues', columns: parseColumnList('"id","title"') })).toBe(expected)
    expect(key({ table: 'issues', columns: ['id', '"Title"'] })).not.toBe(expected)
    expect(() => canonicaliseShape({ table: 'issues', columns: ['id', 'ID'] })).toThrow('a column is listed twice')
  })

  it('gives one text to wheres that differ in spacing, keyword case and redundant parentheses', () => {
    const expected = key({ table: 'issues', where: 'owner_id = $1 AND priority > 2', params: { 1: 'u' } })
    expect(key({ table: 'issues', where: '((OWNER_ID=$1))   and (priority>2)', params: { 1: 'u' } })).toBe(expected)
    expect(key({ table: 'issues', where: 'owner_id = $1 AND priority > 3', params: { 1: 'u' } })).not.toBe(expected)
    expect(key({ table: 'issues', where: 'owner_id = $1 AND priority > 2', params: { 1: 'v' } })).not.toBe(expected)
  })

  it('requires params numbered from 1 and used by the where', () => {
    expect(() => canonicaliseShape({ table: 'issues', where: 'id = $2', params: { 2: '1' } })).toThrow(
      'numbered sequentially'
    )
    expect(() => canonicaliseShape({ table: 'issues', where: 'id = $1', params: {} })).toThrow('params[1] is not given')
    expect(() => canonicaliseShape({ table: 'issues', where: 'id = 1', params: { 1: 'x' } })).toThrow(
      'params[1] is not used'
    )
  })

  it('names the field of a bad definition', () => {
    const fieldOf = (definition: Parameters<typeof canonicaliseShape>[0]) => {
      try {
        canonicaliseShape(definition)
      } catch (error) {
        return (error as ShapeDefinitionError).field
      }
      return null
    }
    expect(fieldOf({ table: 'a.b.c' })).toBe('table')
    expect(fieldOf({ table: 'issues', columns: ['a.b'] })).toBe('columns')
    expect(fieldOf({ table: 'issues', where: 'true) OR (true' })).toBe('where')
    expect(fieldOf({ table: 'issues', where: 'true; DROP TABLE users' })).toBe('where')
    expect(fieldOf({ table: 'issues', where: 'true ORDER BY id' })).toBe('where')
  })

  it('round-trips through the token claim', () => {
    const shape = canonicaliseShape({
      table: '"UserSettings"',
      columns: ['"userId"', '"darkMode"'],
      where: '"pageSize" > $1',
      params: { 1: '10' },
      replica: 'full'
    })
    const claim = shapeClaim(shape)
    expect(claim.table).toBe('public."UserSettings"')
    expect(shapeKey(shapeFromClaim(claim))).toBe(shapeKey(shape))
    expect(tableText(shape)).toBe('"UserSettings"')
  })

  it('lists the fields in which two shapes differ', () => {
    const a = canonicaliseShape({ table: 'issues', columns: ['id'], where: 'id > 1' })
    const b = canonicaliseShape({ table: 'comments', columns: ['id'], where: 'id > 2' })
    expect(shapeDifferences(a, b)).toEqual(['table', 'where'])
    expect(shapeDifferences(a, a)).toEqual([])
  })

  it('writes upstream parameters fully quoted', () => {
    const shape = canonicaliseShape({
      table: '"UserSettings"',
      columns: ['"userId"'],
      where: '"userId" = $1',
      params: { 1: 'x' },
      queryableColumns: ['"userId"']
    })
    expect(upstreamShapeParams(shape)).toEqual([
      ['table', '"public"."UserSettings"'],
      ['columns', '"userId"'],
      ['queryable_columns', '"userId"'],
      ['where', '"userId" = $1'],
      ['params[1]', 'x']
    ])
  })
})

describe('where trees', () => {
  it('conjoins on the trees, so a client where cannot break out of its operand', () => {
    const combined = conjoin(parseWhere('owner_id = $1'), parseWhere('priority > $1 OR status = $2'), 1)
    expect(combined.canonical).toBe('owner_id = $1 AND (priority > $2 OR status = $3)')
    expect([...combined.placeholders].sort()).toEqual([1, 2, 3])
    expect(() => parseWhere('1=1) OR (1=1')).toThrow()
    expect(() => parseWhere('true -- comment')).not.toThrow()
    expect(parseWhere("title = 'a) OR (b'").canonical).toBe("title = 'a) OR (b'")
  })
})
