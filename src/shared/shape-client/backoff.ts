export interface BackoffOptions {
  initialDelayMs: number
  maxDelayMs: number
  multiplier: number
}

/** The official client's defaults: 1 s, doubling, capped at 32 s. */
export const DEFAULT_BACKOFF: BackoffOptions = { initialDelayMs: 1_000, maxDelayMs: 32_000, multiplier: 2 }

const RETRY_AFTER_CAP_MS = 3_600_000

/**
 * The wait before retry number `attempt` (0-based): the capped exponential delay with "equal jitter", i.e. a random
 * point in its upper half, so retries of many clients spread out yet each wait keeps a known lower bound.
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxDelayMs, options.initialDelayMs * options.multiplier ** attempt)
  return ceiling / 2 + random() * (ceiling / 2)
}

/** `Retry-After` in milliseconds (delta-seconds or an HTTP date), capped at an hour; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | null {
  if (!value) return null
  const seconds = Number(value)
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - now
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), RETRY_AFTER_CAP_MS) : null
}

/** Sleeps, waking early (with an AbortError) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
