import { describe, expect, it } from 'vitest'
import type { Membership } from '../../src/shared/shape-client'
import { disjunctsOf, inBySummary, shortHash } from '../../src/renderer/features/shapes/membership-view'

const membership = (tags: string[][], activeConditions: boolean[]): Membership => ({ tags, activeConditions })

describe('disjunctsOf: a row’s tags read as the where’s disjuncts', () => {
  it.each<[string, Membership, Array<{ number: number; holds: boolean; slots: string[] }>]>([
    [
      'one subquery disjunct that holds',
      membership([['h1']], [true]),
      [{ number: 1, holds: true, slots: ['0 subquery h1 active'] }]
    ],
    [
      'one subquery disjunct whose condition went false',
      membership([['h1']], [false]),
      [{ number: 1, holds: false, slots: ['0 subquery h1 inactive'] }]
    ],
    [
      'a plain condition ANDed with a subquery, only the plain one holding',
      membership([['1', 'h2']], [true, false]),
      [{ number: 1, holds: false, slots: ['0 plain - active', '1 subquery h2 inactive'] }]
    ],
    [
      'two disjuncts on different positions, the second holding',
      membership(
        [
          ['h1', ''],
          ['', 'h2']
        ],
        [false, true]
      ),
      [
        { number: 1, holds: false, slots: ['0 subquery h1 inactive'] },
        { number: 2, holds: true, slots: ['1 subquery h2 active'] }
      ]
    ],
    [
      'tags without active_conditions (before protocol 1.6): in until a move-out, every condition holds',
      membership([['h1'], ['h2']], []),
      [
        { number: 1, holds: true, slots: ['0 subquery h1 active'] },
        { number: 2, holds: true, slots: ['0 subquery h2 active'] }
      ]
    ],
    [
      'a condition missing from active_conditions counts as not holding',
      membership([['h1', 'h2']], [true]),
      [{ number: 1, holds: false, slots: ['0 subquery h1 active', '1 subquery h2 inactive'] }]
    ]
  ])('%s', (_, given, expected) => {
    const read = disjunctsOf(given).map(({ number, holds, slots }) => ({
      number,
      holds,
      slots: slots.map((slot) => `${slot.pos} ${slot.kind} ${slot.hash ?? '-'} ${slot.active ? 'active' : 'inactive'}`)
    }))
    expect(read).toEqual(expected)
  })
})

describe('inBySummary: the rows table’s "in by" cell', () => {
  it.each<[string, Membership | null, string]>([
    ['a shape without tags (no membership)', null, ''],
    ['a row without tags (the where has no subquery)', membership([], []), 'always'],
    ['the one disjunct holds', membership([['h1']], [true]), '#1'],
    [
      'the first and third of three hold',
      membership(
        [
          ['h1', '', ''],
          ['', 'h2', ''],
          ['', '', '1']
        ],
        [true, false, true]
      ),
      '#1 #3'
    ],
    ['no disjunct holds: the row is leaving', membership([['h1'], ['h2']], [false, false]), '—'],
    // a server that sends tags without active_conditions (before protocol 1.6): the row is in until a move-out
    ['tags without active_conditions (before protocol 1.6)', membership([['h1'], ['h2']], []), '#1 #2']
  ])('%s', (_, given, expected) => {
    expect(inBySummary(given)).toBe(expected)
  })
})

describe('shortHash', () => {
  it.each([
    ['', ''],
    ['abc', 'abc'],
    ['0123456789', '0123456789'],
    ['0123456789a', '01234567…'],
    ['d41d8cd98f00b204e9800998ecf8427e', 'd41d8cd9…']
  ])('%j → %j', (hash, shown) => {
    expect(shortHash(hash)).toBe(shown)
  })
})
