import { beforeAll, describe, expect, it } from 'vitest'
import {
  type ColumnTypes,
  InputCapError,
  MAX_LIKE_PATTERN_LENGTH,
  MAX_PARAMS_LENGTH,
  compileWhere,
  loadParser
} from '.'

const columns: ColumnTypes = {
  title: { type: 'text', category: 'text' },
  score: { type: 'float8', category: 'number' }
}

function capError(where: string, params: Record<string, string> = {}): InputCapError {
  try {
    compileWhere({ where, params, columns })
  } catch (error) {
    if (error instanceof InputCapError) return error
    throw error
  }
  throw new Error(`accepted: ${where}`)
}

beforeAll(async () => {
  await loadParser()
})

describe('caps on what a where hands the evaluator', () => {
  it(`refuses parameters over ${MAX_PARAMS_LENGTH} characters together, naming the longest and the cap`, () => {
    const error = capError('score > $2::float8 OR title = $1', { 1: 'x', 2: '1'.repeat(MAX_PARAMS_LENGTH) })
    expect(error.param).toBe('params[2]')
    expect(error.cap).toBe('MAX_PARAMS_LENGTH')
    expect(error.message).toBe(
      'the parameters are 65,537 characters long (params[2]: 65,536); together they may hold at most 65,536 (MAX_PARAMS_LENGTH)'
    )
    const many = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [String(i + 1), 'x'.repeat(20_000)]))
    expect(capError('title IN ($1, $2, $3, $4, $5)', many).cap).toBe('MAX_PARAMS_LENGTH')
  })

  it('takes parameters of exactly the cap', () => {
    const params = { 1: 'x'.repeat(MAX_PARAMS_LENGTH - 1), 2: 'y' }
    expect(() => compileWhere({ where: 'title = $1 OR title = $2', params, columns })).not.toThrow()
  })

  it.each([
    ['a constant', `title LIKE '${'_'.repeat(MAX_LIKE_PATTERN_LENGTH + 1)}'`, {}],
    ['a parameter', 'title NOT ILIKE $1', { 1: '%'.repeat(MAX_LIKE_PATTERN_LENGTH + 1) }],
    ['a concatenation', `title LIKE '${'a'.repeat(600)}' || $1`, { 1: 'b'.repeat(600) }],
    ['inside a subquery', `title IN (SELECT t FROM u WHERE t LIKE '${'_'.repeat(2000)}')`, {}]
  ])(`refuses a LIKE pattern over ${MAX_LIKE_PATTERN_LENGTH} characters: %s`, (_, where, params) => {
    const error = capError(where, params)
    expect(error.cap).toBe('MAX_LIKE_PATTERN_LENGTH')
    expect(error.message).toContain(`at most 1,024 (MAX_LIKE_PATTERN_LENGTH)`)
  })

  it('points at the LIKE it refuses, and takes a pattern of exactly the cap', () => {
    expect(capError(`score > 0 AND title LIKE '${'a'.repeat(MAX_LIKE_PATTERN_LENGTH + 1)}'`).position).toBe(21)
    const pattern = `%${'a_'.repeat(MAX_LIKE_PATTERN_LENGTH / 2 - 1)}%`
    expect(pattern.length).toBe(MAX_LIKE_PATTERN_LENGTH)
    expect(compileWhere({ where: 'title LIKE $1', params: { 1: pattern }, columns }).matches({ title: 'ab' })).toBe(
      false
    )
  })
})
