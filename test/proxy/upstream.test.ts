import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveFetchHandler } from '../../src/main/proxy/node-server'
import { forward, upstreamUrl } from '../../src/main/proxy/upstream'

/** A plain HTTP server standing upstream, to see exactly what the proxy sends and how it rewrites what comes back. */
let upstream: Server
let baseUrl: string
const seen: IncomingHttpHeaders[] = []
const BODY = JSON.stringify([{ headers: { control: 'up-to-date' } }])

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push(req.headers)
    const compressed = gzipSync(BODY)
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'content-length': String(compressed.length),
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'x-upstream',
      'set-cookie': 'upstream=1',
      vary: 'Origin',
      'service-offset': '0_0'
    })
    res.end(compressed)
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  baseUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
})
afterAll(() => new Promise((resolve) => upstream.close(resolve)))

describe('forwarding upstream', () => {
  it('sends no client credentials upstream and returns the decompressed body without stale or upstream CORS headers', async () => {
    const { url, record } = upstreamUrl(
      { baseUrl, secret: 's', params: { source_id: 'src' }, headerBrand: 'service' },
      [['table', '"public"."issues"']],
      [['offset', '-1']]
    )
    expect(url.toString()).toBe(`${baseUrl}/v1/shape?table=%22public%22.%22issues%22&source_id=src&secret=s&offset=-1`)
    expect(record.url).toContain('secret=********')
    expect(record.serverParams).toEqual(['table', 'source_id', 'secret'])
    const client = new Request('http://proxy.test/api/shapes/x', {
      headers: { authorization: 'Bearer t', cookie: 'session=t', 'if-none-match': '"e"', 'x-forwarded-for': '1.2.3.4' }
    })
    const response = await forward(url, client, {
      method: 'GET',
      vary: ['Authorization'],
      allowOrigin: null,
      brand: 'service'
    })
    const sent = seen.at(-1) ?? {}
    expect(sent.authorization).toBeUndefined()
    expect(sent.cookie).toBeUndefined()
    expect(sent['x-forwarded-for']).toBeUndefined()
    expect(sent['if-none-match']).toBe('"e"')
    expect(sent.host).toBe(new URL(baseUrl).host)
    expect(response.headers.get('content-encoding')).toBeNull()
    expect(response.headers.get('content-length')).toBeNull()
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
    expect(response.headers.get('access-control-expose-headers')).toBeNull()
    expect(response.headers.get('set-cookie')).toBeNull()
    expect(response.headers.get('vary')).toBe('Origin, Authorization')
    expect(response.headers.get('service-offset')).toBe('0_0')
    expect(await response.text()).toBe(BODY)
  })
})

describe('the Node adapter', () => {
  it('closes the upstream request when the client goes away from a held long-poll', async () => {
    let upstreamClosed: () => void = () => {}
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve))
    let upstreamReached: () => void = () => {}
    const reached = new Promise<void>((resolve) => (upstreamReached = resolve))
    const holding = createServer((req) => {
      upstreamReached()
      req.socket.once('close', () => upstreamClosed())
    })
    await new Promise<void>((resolve) => holding.listen(0, '127.0.0.1', resolve))
    const holdingUrl = new URL(`http://127.0.0.1:${(holding.address() as AddressInfo).port}/v1/shape?live=true`)
    const proxy = await serveFetchHandler(
      (request) => forward(holdingUrl, request, { method: 'GET', vary: [], allowOrigin: null, brand: 'service' }),
      { host: '127.0.0.1', port: 0, log: () => {} }
    )
    try {
      const client = new AbortController()
      const held = fetch(`${proxy.url}/api/shapes/x`, { signal: client.signal }).catch((error: unknown) => error)
      await reached
      client.abort()
      await held
      const stillOpen = new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the upstream request is still open 5 s after the client left')), 5000)
      )
      await Promise.race([closed, stillOpen])
    } finally {
      await proxy.close()
      holding.closeAllConnections()
      await new Promise((resolve) => holding.close(resolve))
    }
  })

  it('answers a failing handler with a generic 500 that reveals nothing', async () => {
    const server = await serveFetchHandler(
      () => {
        throw new Error('secret detail at /srv/app.ts:12')
      },
      { host: '127.0.0.1', port: 0, log: () => {} }
    )
    try {
      const response = await fetch(`${server.url}/api/shapes/x`)
      expect(response.status).toBe(500)
      expect(await response.text()).toBe('{"error":{"code":"internal_error","message":"internal error"}}')
    } finally {
      await server.close()
    }
  })
})
