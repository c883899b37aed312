import { describe, expect, it, vi } from 'vitest'
import type { Message } from '../../src/shared/shape-client'
import { LatencyTracker } from '../../src/renderer/features/shapes/engine/latency'

const change = (lsn: string): Message => ({
  key: `k${lsn}`,
  value: { id: lsn },
  headers: { operation: 'insert', lsn, op_position: 0 }
})

/**
 * The server's answers to GET /v1/debug/commit-times, one per call, as it gives them (test/shapes/commit-times.test.ts
 * checks the endpoint itself): here only the order of events matters, which a live server does not let a test pick.
 */
function answers(...lists: Array<Array<{ lsn: string; committed_at: number | null; appended_at: number }>>) {
  const calls: string[] = []
  const fetch = vi.fn(async (url: URL | string) => {
    calls.push(String(url))
    const transactions = (lists.shift() ?? []).map((transaction) => ({ xid: 1, changes: 1, ...transaction }))
    return new Response(JSON.stringify({ handle: 'h', transactions }), { status: 200 })
  })
  return { fetch: fetch as unknown as typeof globalThis.fetch, calls }
}

describe('LatencyTracker joins the server’s commit times with arrivals by commit LSN', () => {
  it('times a transaction the server listed before it arrived here', async () => {
    const now = Date.now()
    const server = answers([
      { lsn: '100', committed_at: now - 50, appended_at: now - 45 },
      // appended by the server, on its way to this client when the client asked
      { lsn: '200', committed_at: now - 20, appended_at: now - 15 }
    ])
    const tracker = new LatencyTracker({
      endpoint: { url: 'http://127.0.0.1:1/v1/debug/commit-times', params: { secret: 's' } },
      handle: () => 'h',
      changed: () => undefined,
      fetch: server.fetch
    })
    tracker.received([change('100')])
    await vi.waitFor(() => expect(tracker.view().transactions).toBe(1))
    tracker.received([change('200')])
    expect(tracker.view().transactions).toBe(2)
    expect(server.calls).toHaveLength(1)
    expect(new URL(server.calls[0] as string).searchParams.toString()).toBe('secret=s&handle=h&after=0')
    tracker.stop()
  })

  it('never times a transaction the server has no commit time for, and asks only after what it listed', async () => {
    const now = Date.now()
    const server = answers([{ lsn: '300', committed_at: null, appended_at: now }], [])
    const tracker = new LatencyTracker({
      endpoint: { url: 'http://127.0.0.1:1/v1/debug/commit-times', params: {} },
      handle: () => 'h',
      changed: () => undefined,
      fetch: server.fetch
    })
    tracker.received([change('300')])
    await vi.waitFor(() => expect(server.calls).toHaveLength(1))
    tracker.received([change('300'), change('400')])
    await vi.waitFor(() => expect(server.calls).toHaveLength(2))
    expect(new URL(server.calls[1] as string).searchParams.get('after')).toBe('300')
    expect(tracker.view()).toMatchObject({ transactions: 0, liveMessages: 3, status: { state: 'waiting' } })
    tracker.stop()
  })
})
