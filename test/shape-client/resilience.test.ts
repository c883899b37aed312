import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Shape, type ShapeStreamError, type ShapeStreamOptions } from '../../src/shared/shape-client'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { startTestProxy, waitFor, type ProxyAction, type SeenRequest, type TestProxy } from './support'

const SECRET = 'the-api-secret'
const BACKOFF = { initialDelayMs: 100, maxDelayMs: 400, multiplier: 2 }

/** Errors, credentials and proxies in the path, against the real server (electric brand, with an API secret). */
describe('shape client: errors, credentials, backoff and SSE fallback', () => {
  let server: TestShapeServer
  let proxy: TestProxy | null = null
  const shapes: Shape[] = []

  beforeAll(async () => {
    server = await startTestShapeServer({
      headerBrand: 'electric',
      secret: SECRET,
      longPollTimeout: 1_000,
      sseKeepAlive: 300
    })
  })
  afterEach(async () => {
    shapes.splice(0).forEach((shape) => shape.stop())
    await proxy?.close()
    proxy = null
  })
  afterAll(async () => server?.close())

  const open = (options: Partial<ShapeStreamOptions> & { url: string }) => {
    const shape = new Shape({
      params: { table: 'projects', where: 'id <= 1000000003', secret: SECRET },
      backoff: BACKOFF,
      ...options
    })
    shapes.push(shape)
    return shape
  }
  const through = async (decide: (request: SeenRequest, index: number) => ProxyAction) => {
    proxy = await startTestProxy(server.url, decide)
    return proxy
  }
  const gaps = (seen: SeenRequest[]) => seen.slice(1).map((request, index) => request.at - (seen[index]?.at ?? 0))

  it('retries a burst of 5xx with growing, capped, jittered waits and honours Retry-After', async () => {
    const failures: ProxyAction[] = [
      { kind: 'respond', status: 503, body: '{"message":"busy"}' },
      { kind: 'respond', status: 500, body: '{"error":"Internal server error"}' },
      { kind: 'respond', status: 502, body: 'bad gateway' },
      { kind: 'respond', status: 503, body: '{"message":"busy"}' },
      { kind: 'respond', status: 503, headers: { 'retry-after': '1' }, body: '{"message":"busy"}' }
    ]
    const { url, seen } = await through((_request, index) => failures[index] ?? { kind: 'pass' })
    const shape = open({ url, live: 'off' })
    await shape.start()
    expect(shape.stream.current.phase).toBe('up-to-date')
    expect(shape.rows.size).toBe(3)
    const waits = gaps(seen.slice(0, 6))
    // Attempt n waits within [ceiling/2, ceiling] with ceiling = min(400, 100·2^n); the last one at least Retry-After.
    const ceilings = [100, 200, 400, 400]
    ceilings.forEach((ceiling, index) => {
      expect(waits[index]).toBeGreaterThanOrEqual(ceiling / 2 - 5)
      expect(waits[index]).toBeLessThan(ceiling + 250)
    })
    expect(waits[4]).toBeGreaterThanOrEqual(995)
    const notes = shape.stream.recorder.entries.filter((entry) => entry.type === 'note' && entry.level === 'warn')
    expect(notes).toHaveLength(5)
  })

  it('retries network errors with backoff', async () => {
    const { url, seen } = await through((_request, index) => (index < 2 ? { kind: 'reset' } : { kind: 'pass' }))
    const shape = open({ url, live: 'off' })
    await shape.start()
    expect(shape.rows.size).toBe(3)
    expect(seen.length).toBeGreaterThanOrEqual(4)
    const failed = shape.stream.recorder.exchanges.filter((exchange) => exchange.failure)
    expect(failed).toHaveLength(2)
  })

  it('abandons a long-poll the path never answers and carries on', async () => {
    let hung = false
    const { url } = await through((request) =>
      request.url.includes('live=true') && !hung ? ((hung = true), { kind: 'hang' }) : { kind: 'pass' }
    )
    const shape = open({ url, liveRequestTimeoutMs: 300 })
    void shape.start()
    await waitFor(() => shape.stream.recorder.exchanges.some((exchange) => exchange.failure), 'the abandoned long-poll')
    await server.pool.query(`UPDATE projects SET name = 'After the watchdog' WHERE id = 1000000002`)
    await waitFor(
      () => shape.rows.get('"public"."projects"/"1000000002"')?.name === 'After the watchdog',
      'the change after the retry'
    )
    const failure = shape.stream.recorder.exchanges.find((exchange) => exchange.failure)
    expect(failure?.request.live).toBe('long-poll')
    expect(failure?.failure?.message).toMatch(/timeout|abort/i)
  })

  it('resolves header and parameter functions for every request, in parallel', async () => {
    let inFlight = 0
    let maxInFlight = 0
    let calls = 0
    const slow = async <T>(value: T) => {
      calls += 1
      inFlight += 1
      maxInFlight = Math.max(maxInFlight, inFlight)
      await new Promise((resolve) => setTimeout(resolve, 20))
      inFlight -= 1
      return value
    }
    let token = 0
    const { url, seen } = await through(() => ({ kind: 'pass' }))
    const shape = open({
      url,
      params: { table: 'projects', where: 'id <= 1000000003', secret: () => slow(SECRET) },
      headers: { authorization: () => slow(`Bearer token-${++token}`), 'x-static': 'yes' }
    })
    void shape.start()
    await waitFor(() => shape.stream.current.phase === 'live' && seen.length >= 3, 'live requests')
    shape.stop()
    expect(maxInFlight).toBe(2)
    // Each request resolved both functions; one more request may have been resolving when the stream stopped.
    expect(calls).toBeGreaterThanOrEqual(seen.length * 2)
    expect(calls).toBeLessThanOrEqual(seen.length * 2 + 2)
    expect(seen.map((request) => request.headers.authorization)).toEqual(
      seen.map((_request, index) => `Bearer token-${index + 1}`)
    )
    expect(seen.every((request) => request.headers['x-static'] === 'yes')).toBe(true)
    // The recorder keeps what was sent, with the credentials masked.
    expect(shape.stream.recorder.exchanges[0]?.request.headers).toContainEqual(['authorization', 'Bear…(14 chars)'])
    expect(shape.stream.recorder.exchanges[0]?.request.url).not.toContain(SECRET)
  })

  it('asks onError for new credentials on 401 and retries with what it returns', async () => {
    const errors: ShapeStreamError[] = []
    const shape = open({
      url: `${server.url}/v1/shape`,
      live: 'off',
      params: { table: 'projects', where: 'id <= 1000000003', secret: 'wrong' },
      onError: (error) => {
        errors.push(error)
        return { params: { secret: SECRET } }
      }
    })
    await shape.start()
    expect(errors.map((error) => [error.kind, error.status])).toEqual([['credentials', 401]])
    expect(shape.rows.size).toBe(3)
  })

  it('on 403 through a proxy, retries with the headers onError returns', async () => {
    const { url, seen } = await through((request) =>
      request.headers.authorization === 'Bearer fresh'
        ? { kind: 'pass' }
        : { kind: 'respond', status: 403, body: '{"message":"token expired"}' }
    )
    const errors: ShapeStreamError[] = []
    const shape = open({
      url,
      live: 'off',
      headers: { authorization: 'Bearer stale' },
      onError: (error) => {
        errors.push(error)
        return { headers: { authorization: async () => 'Bearer fresh' } }
      }
    })
    await shape.start()
    expect(errors.map((error) => [error.kind, error.status, error.message])).toEqual([
      ['credentials', 403, 'HTTP 403: token expired']
    ])
    expect(seen.map((request) => request.headers.authorization)).toEqual([
      'Bearer stale',
      'Bearer fresh',
      'Bearer fresh'
    ])
    expect(shape.rows.size).toBe(3)
  })

  it('retries as is when onError returns {} and stops when it returns nothing', async () => {
    const errors: ShapeStreamError[] = []
    const shape = open({
      url: `${server.url}/v1/shape`,
      params: { table: 'projects', where: 'id <= ', secret: SECRET },
      onError: (error) => {
        errors.push(error)
        return errors.length < 3 ? {} : undefined
      }
    })
    await shape.start()
    expect(errors).toHaveLength(3)
    expect(errors.every((error) => error.kind === 'client' && error.status === 400)).toBe(true)
    expect(errors[0]?.json).toMatchObject({ errors: { where: [expect.stringMatching(/syntax error/)] } })
    expect(shape.stream.current.phase).toBe('failed')
    expect(shape.stream.current.error?.status).toBe(400)
    expect(shape.stream.recorder.exchanges).toHaveLength(3)
  })

  it('stops on a 4xx without onError', async () => {
    const shape = open({ url: `${server.url}/v1/shape`, params: { table: 'no_such_table', secret: SECRET } })
    await shape.start()
    expect(shape.stream.current).toMatchObject({ phase: 'failed', error: { kind: 'client', status: 400 } })
    expect(shape.stream.recorder.exchanges).toHaveLength(1)
  })

  it('falls back from SSE to long-polling after 3 connections a buffering proxy closes at once, and says so', async () => {
    const { url, seen } = await through((request) =>
      request.url.includes('live_sse=true') ? { kind: 'buffer', holdMs: 150 } : { kind: 'pass' }
    )
    const shape = open({
      url,
      live: 'sse',
      params: { table: 'projects', where: 'id BETWEEN 1000000031 AND 1000000033', secret: SECRET }
    })
    void shape.start()
    await waitFor(() => shape.stream.current.sseFellBack, 'the fallback', 20_000)
    expect(shape.stream.current.liveMode).toBe('long-poll')
    expect(seen.filter((request) => request.url.includes('live_sse=true'))).toHaveLength(3)
    const warning = shape.stream.recorder.entries.find((entry) => entry.type === 'note' && /buffering/.test(entry.text))
    expect(warning).toBeTruthy()
    await server.pool.query(`UPDATE projects SET name = 'Via long-poll' WHERE id = 1000000032`)
    await waitFor(
      () => shape.rows.get('"public"."projects"/"1000000032"')?.name === 'Via long-poll',
      'the change over long-poll'
    )
    const afterFallback = shape.stream.recorder.exchanges.filter((exchange) => exchange.request.live === 'long-poll')
    expect(afterFallback.length).toBeGreaterThan(0)
    expect(afterFallback.every((exchange) => !exchange.request.url.includes('live_sse'))).toBe(true)
  })
})
