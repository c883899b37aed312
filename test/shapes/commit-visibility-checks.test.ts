import type pg from 'pg'
import { describe, expect, it } from 'vitest'
import { xidSnapshot } from '../../src/shared/xid-snapshot'
import { CommitVisibility } from '../../src/main/shapes/replication/commit-visibility'

const noPool = {} as pg.Pool
/** Taken while 105 was still running, and one taken after it became visible. */
const early = xidSnapshot('100', '110', ['105'])
const later = xidSnapshot('106', '110', [])

/**
 * The bookkeeping behind waiting for commits that are replicated before they are visible (the database side is in
 * commit-visibility.test.ts). Found by the randomized subquery test: a check pruned what another check,
 * whose snapshot was older, still lacked.
 */
describe('CommitVisibility', () => {
  it('a snapshot taken while a commit was not visible lacks it, even when a later snapshot was checked first', () => {
    const visibility = new CommitVisibility(noPool)
    visibility.taken(105, 1000n)
    const first = visibility.check()
    const second = visibility.check()
    expect(second.lacks(later, 1000n)).toBe(null)
    second.done()
    expect(first.lacks(early, 1000n)).toBe(105)
    first.done()
  })

  it('forgets a transaction once a snapshot included it and every check opened before is done', () => {
    const visibility = new CommitVisibility(noPool)
    visibility.taken(105, 1000n)
    visibility.taken(107, 1010n)
    const first = visibility.check()
    const second = visibility.check()
    second.lacks(later, 2000n)
    second.done()
    expect(visibility.size).toBe(2)
    first.done()
    expect(visibility.size).toBe(0)
    // a check opened after a sighting needs nothing more to forget it
    visibility.taken(108, 1020n)
    const third = visibility.check()
    third.lacks(xidSnapshot('109', '110', []), 2000n)
    const fourth = visibility.check()
    third.done()
    expect(visibility.size).toBe(0)
    fourth.done()
  })

  it('what is lacked is bounded by `through` and `except`', () => {
    const visibility = new CommitVisibility(noPool)
    visibility.taken(105, 1000n)
    const check = visibility.check()
    expect(check.lacks(early, 999n)).toBe(null)
    expect(check.lacks(early, 1000n, new Set([105]))).toBe(null)
    expect(check.lacks(early, 1000n)).toBe(105)
    check.done()
  })
})
