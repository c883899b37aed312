/**
 * fetch for a client whose SSE responses (`live_sse=true`) are cut after `fromMs` to `fromMs + spreadMs` (a flaky
 * network, a proxy's idle limit), the times drawn from `seed` so that a failing run can be replayed: every SSE client
 * resumes many times during a test's writes. Each SSE request's URL is added to `sseRequests` when given.
 */
export function cuttingFetch(
  seed: number,
  { fromMs, spreadMs, sseRequests }: { fromMs: number; spreadMs: number; sseRequests?: string[] }
): typeof fetch {
  let state = seed
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state / 2 ** 31
  }
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input)
    if (!url.includes('live_sse=true')) return fetch(input, init)
    sseRequests?.push(url)
    const cut = new AbortController()
    setTimeout(() => cut.abort(new Error('cut by the test')), fromMs + random() * spreadMs).unref()
    return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal })
  }
}
