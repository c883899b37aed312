import { describe, expect, it } from 'vitest'
import { backoffDelay, DEFAULT_BACKOFF, retryAfterMs, sleep } from '../../src/shared/shape-client/backoff'

describe('backoff', () => {
  it('doubles from the initial delay up to the cap, jittered within the upper half', () => {
    const low = (attempt: number) => backoffDelay(attempt, DEFAULT_BACKOFF, () => 0)
    const high = (attempt: number) => backoffDelay(attempt, DEFAULT_BACKOFF, () => 1)
    expect([0, 1, 2, 3, 4, 5, 6, 10].map(high)).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 32000, 32000])
    expect([0, 1, 5, 10].map(low)).toEqual([500, 1000, 16000, 16000])
    const sample = backoffDelay(2, DEFAULT_BACKOFF)
    expect(sample).toBeGreaterThanOrEqual(2000)
    expect(sample).toBeLessThanOrEqual(4000)
  })

  it('reads Retry-After as seconds or an HTTP date, capped at an hour', () => {
    expect(retryAfterMs('5')).toBe(5000)
    expect(retryAfterMs(null)).toBeNull()
    expect(retryAfterMs('soon')).toBeNull()
    expect(retryAfterMs('99999')).toBe(3_600_000)
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:10 GMT', now)).toBe(10_000)
    expect(retryAfterMs('Wed, 31 Dec 2025 00:00:10 GMT', now)).toBe(0)
  })

  it('sleeps until aborted', async () => {
    const controller = new AbortController()
    const started = Date.now()
    const sleeping = sleep(10_000, controller.signal)
    setTimeout(() => controller.abort(new Error('stop')), 20)
    await expect(sleeping).rejects.toThrow('stop')
    expect(Date.now() - started).toBeLessThan(5_000)
  })
})
