import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveFetchHandler, type NodeFetchServer } from '../../src/main/proxy/node-server'
import { MAX_DECOMPRESSED_BYTES, forward } from '../../src/main/proxy/upstream'
import { holdConnections, tooManyConnections } from '../support/connections'

/** 16 MiB of zeros gzipped, sent again and again: far more than the cap once inflated, a few hundred kB on the wire. */
const PIECE = gzipSync(Buffer.alloc(16 * 1024 * 1024), { level: 9 })
const PIECES = Math.ceil(MAX_DECOMPRESSED_BYTES / (16 * 1024 * 1024)) + 4

describe('the proxy bounds what a hostile upstream and a connection flood can cost', () => {
  let upstream: Server
  let upstreamUrl: string
  let proxy: NodeFetchServer
  const logs: string[] = []

  beforeAll(async () => {
    // a gzip member per piece: a valid gzip stream that inflates to PIECES × 16 MiB
    upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
      for (let i = 0; i < PIECES; i++) res.write(PIECE)
      res.end()
    })
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1/shape`
    proxy = await serveFetchHandler(
      (incoming) =>
        forward(new URL(upstreamUrl), incoming, { method: 'GET', vary: [], allowOrigin: null, brand: 'electric' }),
      { host: '127.0.0.1', port: 0, maxConnections: 2, log: (line) => logs.push(line) }
    )
  })
  afterAll(async () => {
    await proxy?.close()
    upstream?.close()
  })

  it('cuts a compressed upstream answer once it passes the cap decompressed, and says why', async () => {
    const received = await new Promise<{ bytes: number; error: string | null }>((resolve) => {
      let bytes = 0
      request(`${proxy.url}/v1/shape?offset=-1`, { agent: false }, (res) => {
        res.on('data', (chunk: Buffer) => (bytes += chunk.length))
        res.on('end', () => resolve({ bytes, error: null }))
        res.on('error', (error) => resolve({ bytes, error: error.message }))
        res.on('aborted', () => resolve({ bytes, error: 'aborted' }))
      })
        .on('error', (error) => resolve({ bytes, error: error.message }))
        .end()
    })
    expect(received.error).not.toBeNull()
    expect(received.bytes).toBeLessThanOrEqual(MAX_DECOMPRESSED_BYTES)
    expect(logs.join('\n')).toMatch(/the gzip answer of http:\/\/127\.0\.0\.1:\d+ passed 100 MiB once decompressed/)
  })

  it('answers connections past its cap 503 naming the limit', async () => {
    const port = Number(new URL(proxy.url).port)
    const held = await holdConnections(port, 2)
    try {
      const refused = await fetch(`${proxy.url}/v1/shape?offset=-1`)
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('5')
      expect(await refused.json()).toEqual(tooManyConnections('the proxy', 2))
    } finally {
      for (const socket of held) socket.destroy()
    }
  })
})
