import { describe, expect, it } from 'vitest'
import { disjunctsOf, inBySummary, shortHash } from '../../src/renderer/features/shapes/membership-view'

// tasks WHERE project_id IN (SELECT …) OR owner_id = $1: tags ["<hash>/", "/1"], positions 0 and 1.
const HASH = '3f2a9c41d0e14b7f8a6c2e5d9b0f1a2c'

describe('the workbench’s reading of a row’s tags', () => {
  it('lists each disjunct with its positions and whether it holds', () => {
    expect(
      disjunctsOf({
        tags: [
          [HASH, ''],
          ['', '1']
        ],
        activeConditions: [false, true]
      })
    ).toEqual([
      { number: 1, holds: false, slots: [{ pos: 0, kind: 'subquery', hash: HASH, active: false }] },
      { number: 2, holds: true, slots: [{ pos: 1, kind: 'plain', hash: null, active: true }] }
    ])
  })

  it('sums up the holding disjuncts for the rows table', () => {
    expect(
      inBySummary({
        tags: [
          [HASH, ''],
          ['', '1']
        ],
        activeConditions: [true, true]
      })
    ).toBe('#1 #2')
    expect(
      inBySummary({
        tags: [
          [HASH, ''],
          ['', '1']
        ],
        activeConditions: [false, false]
      })
    ).toBe('—')
    expect(inBySummary({ tags: [], activeConditions: [] })).toBe('always')
    expect(inBySummary(null)).toBe('')
    expect(shortHash(HASH)).toBe('3f2a9c41…')
  })
})
