import { describe, expect, it } from 'vitest'
import { ShapeStreamError } from '../../src/shared/shape-client/errors'
import { whereErrorOf } from '../../src/renderer/features/shapes/where-error'

const badRequest = (errors: unknown) =>
  new ShapeStreamError(
    'client',
    'HTTP 400',
    'http://h/v1/shape',
    400,
    JSON.stringify({ message: 'Invalid request', errors })
  )

describe('whereErrorOf', () => {
  it('places syntax errors, counted in the wrapped SELECT 1 WHERE statement, inside the where text', () => {
    expect(whereErrorOf(badRequest({ where: ['At location 17: syntax error at or near "x"'] }), '1 x 1')).toEqual({
      message: 'syntax error at or near "x"',
      position: 2
    })
  })

  it('takes other errors at their position in the where text, and clamps to it', () => {
    expect(whereErrorOf(badRequest({ where: ['At location 0: unknown reference foo'] }), 'foo = 1')).toEqual({
      message: 'unknown reference foo',
      position: 0
    })
    expect(whereErrorOf(badRequest({ where: ['At location 99: x'] }), 'ab')).toEqual({ message: 'x', position: 2 })
    expect(whereErrorOf(badRequest({ where: ['WHERE clause must return a boolean'] }), 'id')).toEqual({
      message: 'WHERE clause must return a boolean',
      position: null
    })
  })

  it('places a subquery shape’s errors (the reference’s wording) in the where text', () => {
    const where = 'project_id = ANY (SELECT id FROM projects)'
    expect(
      whereErrorOf(
        badRequest({ where: ['At location 13: only `value IN (SELECT ...)` sublinks are supported right now'] }),
        where
      )
    ).toEqual({
      message: 'only `value IN (SELECT ...)` sublinks are supported right now',
      position: 13
    })
    expect(
      whereErrorOf(
        badRequest({ where: ['SELECT statement must not contain any clauses'] }),
        'id IN (SELECT id FROM t LIMIT 1)'
      )
    ).toEqual({
      message: 'SELECT statement must not contain any clauses',
      position: null
    })
  })

  it('ignores errors that are not about where', () => {
    expect(whereErrorOf(badRequest({ table: ['does not exist'] }), 'x')).toBeNull()
    expect(whereErrorOf(null, 'x')).toBeNull()
    expect(whereErrorOf(new ShapeStreamError('credentials', 'HTTP 401', 'u', 401, '{}'), 'x')).toBeNull()
  })
})
