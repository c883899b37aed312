import { describe, expect, it } from 'vitest'
import { WINDOW_ROWS, ago, share, windowStart } from '../../src/renderer/features/server/server-view'

describe('the Server page: which rows it fetches, and how it words times and shares', () => {
  it.each([
    [0, 0],
    [99, 0],
    [150, 0],
    [200, 100],
    [1_234, 1_100],
    [99_990, 99_800]
  ])('a first visible row %i fetches from %i, and the window still holds the screen below it', (first, start) => {
    expect(windowStart(first)).toBe(start)
    expect(first - start).toBeLessThan(WINDOW_ROWS - 100)
  })

  it('says how long ago, in the largest unit that fits', () => {
    const now = Date.parse('2026-01-02T00:00:00Z')
    expect(ago(null, now)).toBe('never')
    expect(ago('2026-01-01T23:59:57Z', now)).toBe('3 s ago')
    expect(ago('2026-01-01T23:30:00Z', now)).toBe('30 min ago')
    expect(ago('2026-01-01T20:00:00Z', now)).toBe('4 h ago')
    expect(ago('2025-12-28T00:00:00Z', now)).toBe('5 d ago')
    // a clock a little ahead of the browser's is not the future
    expect(ago('2026-01-02T00:00:02Z', now)).toBe('0 s ago')
  })

  it('gives a share of a bound, never past 100%, and 0% without a bound', () => {
    expect(share(1, 3)).toBe('33%')
    expect(share(5, 4)).toBe('100%')
    expect(share(3, 0)).toBe('0%')
  })
})
