import { beforeAll, describe, expect, it } from 'vitest'
import { type ColumnTypes, WhereError, compileOrderBy, loadParser } from '../../src/main/sql'

const columns: ColumnTypes = {
  id: { type: 'int4', category: 'number' },
  title: { type: 'text', category: 'text' },
  Title: { type: 'text', category: 'text' },
  salary: { type: 'numeric', category: 'number' }
}

function rejection(orderBy: string, allowed?: readonly string[]): WhereError {
  try {
    compileOrderBy(orderBy, columns, allowed)
  } catch (error) {
    if (error instanceof WhereError) return error
    throw error
  }
  throw new Error(`accepted: ${orderBy}`)
}

beforeAll(async () => {
  await loadParser()
})

describe('compileOrderBy', () => {
  it('rebuilds column lists with directions and null ordering', () => {
    expect(compileOrderBy('id', columns).sql).toBe('id')
    expect(compileOrderBy('title DESC NULLS LAST, id asc', columns).sql).toBe('title DESC NULLS LAST, id ASC')
    expect(compileOrderBy('"Title" NULLS FIRST -- comment', columns).sql).toBe('"Title" NULLS FIRST')
  })

  it.each([
    ['CAST((SELECT version()) AS int) DESC', 'expressions are not allowed'],
    ['(SELECT count(*) FROM pg_tables)', 'expressions are not allowed'],
    ['pg_sleep(5)', 'expressions are not allowed'],
    ['id::text', 'expressions are not allowed'],
    ['id + 1', 'expressions are not allowed'],
    ['1', 'expressions are not allowed'],
    ['CASE WHEN id = 1 THEN 1 END', 'expressions are not allowed'],
    ['$1', 'parameter $1 is not supported'],
    ['t.id', 'expressions are not allowed'],
    ['id USING <', 'USING is not allowed'],
    ['nope', 'unknown column "nope"'],
    ['id; drop table x', 'single clause'],
    ['id LIMIT 1', 'comma-separated list of columns'],
    ['', 'syntax error']
  ])('rejects %s', (orderBy, message) => {
    const error = rejection(orderBy)
    expect(error.param).toBe('order_by')
    expect(error.message).toContain(message)
  })

  it('limits columns to the allow-list', () => {
    expect(rejection('salary DESC', ['id', 'title'])).toMatchObject({ message: 'unknown column "salary"', position: 1 })
    expect(compileOrderBy('title', columns, ['id', 'title']).sql).toBe('title')
  })
})
