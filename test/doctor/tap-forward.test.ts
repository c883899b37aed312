import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTap, type RunningTap } from '../../src/main/doctor/tap'

/** A plain HTTP server on loopback that records the request targets it was sent. */
async function recordingServer(answer: string): Promise<{ server: Server; port: number; seen: string[] }> {
  const seen: string[] = []
  const server = createServer((req, res) => {
    seen.push(req.url ?? '')
    res.writeHead(200, { 'content-type': 'text/plain' }).end(answer)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as AddressInfo).port, seen }
}

function dechunk(body: string): string {
  let text = ''
  for (let at = 0; ;) {
    const lineEnd = body.indexOf('\r\n', at)
    const size = parseInt(body.slice(at, lineEnd), 16)
    if (!(size > 0)) return text
    text += body.slice(lineEnd + 2, lineEnd + 2 + size)
    at = lineEnd + 2 + size + 2
  }
}

/** Sends one request line as written (no client library normalises it) and reads the whole answer. */
function rawRequest(port: number, requestLine: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()))
    socket.on('error', reject)
    socket.on('end', () => {
      const split = text.indexOf('\r\n\r\n')
      const head = text.slice(0, split)
      const body = text.slice(split + 4)
      resolve({
        status: Number(head.split(' ')[1]),
        body: /transfer-encoding: chunked/i.test(head) ? dechunk(body) : body
      })
    })
    socket.write(`${requestLine}\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
  })
}

describe('syncscope tap forwards only to its upstream', () => {
  let upstream: Awaited<ReturnType<typeof recordingServer>>
  let loopbackService: Awaited<ReturnType<typeof recordingServer>>
  let tap: RunningTap
  let dir: string

  beforeAll(async () => {
    upstream = await recordingServer('from the upstream')
    loopbackService = await recordingServer('a loopback-only secret')
    dir = await mkdtemp(join(tmpdir(), 'syncscope-tap-forward-'))
    tap = await startTap({
      upstream: `http://127.0.0.1:${upstream.port}`,
      host: '127.0.0.1',
      port: 0,
      out: join(dir, 'tap.har')
    })
  })
  afterAll(async () => {
    await tap?.close()
    upstream?.server.close()
    loopbackService?.server.close()
    await rm(dir, { recursive: true, force: true })
  })

  const tapPort = () => Number(new URL(tap.url).port)
  const tapHost = () => `127.0.0.1:${tapPort()}`

  it.each([
    ['a scheme-relative target', (port: number) => `GET //127.0.0.1:${port}/private HTTP/1.1`],
    ['an absolute-form target', (port: number) => `GET http://127.0.0.1:${port}/private HTTP/1.1`],
    ['a scheme-relative target with backslashes', (port: number) => `GET /\\127.0.0.1:${port}/private HTTP/1.1`]
  ])('refuses %s with 400 naming the problem, and the other service never hears of it', async (_, line) => {
    const answer = await rawRequest(tapPort(), line(loopbackService.port), tapHost())
    expect(answer.status).toBe(400)
    expect(JSON.parse(answer.body)).toMatchObject({
      code: 'invalid_request_target',
      message: expect.stringContaining('path')
    })
    expect(answer.body).not.toContain('loopback-only secret')
    expect(loopbackService.seen).toEqual([])
  })

  it('refuses `*` and a path that climbs out of the upstream path, and passes an origin-form path on', async () => {
    expect((await rawRequest(tapPort(), 'OPTIONS * HTTP/1.1', tapHost())).status).toBe(400)
    const passed = await rawRequest(tapPort(), 'GET /v1/shape?table=issues&offset=-1 HTTP/1.1', tapHost())
    expect(passed).toEqual({ status: 200, body: 'from the upstream' })
    expect(upstream.seen).toEqual(['/v1/shape?table=issues&offset=-1'])
    expect(loopbackService.seen).toEqual([])
  })

  it('keeps a tap with an upstream path under that path', async () => {
    const based = await startTap({
      upstream: `http://127.0.0.1:${upstream.port}/electric`,
      host: '127.0.0.1',
      port: 0,
      out: join(dir, 'based.har')
    })
    try {
      const port = Number(new URL(based.url).port)
      const climbed = await rawRequest(port, 'GET /../admin HTTP/1.1', `127.0.0.1:${port}`)
      expect(climbed.status).toBe(400)
      expect(JSON.parse(climbed.body)).toMatchObject({ code: 'invalid_request_target' })
      const encoded = await rawRequest(port, 'GET /%2e%2e/admin HTTP/1.1', `127.0.0.1:${port}`)
      expect(encoded.status).toBe(400)
      upstream.seen.length = 0
      expect((await rawRequest(port, 'GET /v1/shape?offset=-1 HTTP/1.1', `127.0.0.1:${port}`)).status).toBe(200)
      expect(upstream.seen).toEqual(['/electric/v1/shape?offset=-1'])
    } finally {
      await based.close()
    }
  })
})
