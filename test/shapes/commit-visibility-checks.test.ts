import type pg from 'pg'
import { describe, expect, it } from 'vitest'
import { xidSnapshot } from '../../src/shared/xid-snapshot'
import { CommitVisibility } from '../../src/main/shapes/snapshot/commit-visibility'

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
    expect(second.lacks(later)).toBe(null)
    second.done()
    expect(first.lacks(early)).toBe(105)
    first.done()
  })

  it('forgets a transaction once a snapshot included it and every check opened before is done', () => {
    const visibility = new CommitVisibility(noPool)
    visibility.taken(105, 1000n)
    visibility.taken(107, 1010n)
    const first = visibility.check()
    const second = visibility.check()
    second.lacks(later)
    second.done()
    expect(visibility.size).toBe(2)
    first.done()
    expect(visibility.size).toBe(0)
    // a check opened after a sighting needs nothing more to forget it
    visibility.taken(108, 1020n)
    const third = visibility.check()
    third.lacks(xidSnapshot('109', '110', []))
    const fourth = visibility.check()
    third.done()
    expect(visibility.size).toBe(0)
    fourth.done()
  })

  it('what is lacked: transactions taken before the check was opened (or through the LSN given), those of `except` aside', () => {
    const visibility = new CommitVisibility(noPool)
    visibility.taken(105, 1000n)
    expect(visibility.check(999n).lacks(early)).toBe(null)
    const check = visibility.check()
    expect(check.lacks(early, new Set([105]))).toBe(null)
    expect(check.lacks(early)).toBe(105)
    check.done()
  })

  it('a transaction taken after the check was opened is not lacked: it may have committed after the snapshot', () => {
    // found by bench/subquery-exactness.ts: under 200 writes a second, move-in queries kept reading again for
    // transactions that committed after their snapshot, until the shape was dropped (30 s, or 1,000 held)
    const visibility = new CommitVisibility(noPool)
    visibility.taken(101, 900n)
    const check = visibility.check()
    visibility.taken(105, 1000n)
    expect(check.lacks(early)).toBe(null)
    check.done()
    expect(visibility.check().lacks(early)).toBe(105)
  })
})
