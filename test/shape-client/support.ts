import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Polls until the check passes (returns a truthy value), failing with the last state after the timeout. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** What the test proxy does with one request. */
export type ProxyAction =
  | { kind: 'pass' }
  /** Answers by itself with this status, headers and body, without reaching the server. */
  | { kind: 'respond'; status: number; headers?: Record<string, string>; body: string }
  /** Drops the connection: a network error for the client. */
  | { kind: 'reset' }
  /** Never answers (until the client gives up or the proxy closes). */
  | { kind: 'hang' }
  /** Holds the server's response for this long, then sends what it got so far in one piece and closes (a buffering proxy). */
  | { kind: 'buffer'; holdMs: number }

export interface SeenRequest {
  at: number
  url: string
  headers: IncomingMessage['headers']
}

export interface TestProxy {
  /** The shape endpoint through the proxy. */
  url: string
  seen: SeenRequest[]
  close(): Promise<void>
}

/** A small HTTP proxy on 127.0.0.1 in front of the real server that can inject failures and buffer responses. */
export async function startTestProxy(
  upstream: string,
  decide: (request: SeenRequest, index: number) => ProxyAction
): Promise<TestProxy> {
  const seen: SeenRequest[] = []
  const target = new URL(upstream)
  const server: Server = createServer((req, res) => {
    const entry = { at: Date.now(), url: req.url ?? '/', headers: req.headers }
    seen.push(entry)
    const action = decide(entry, seen.length - 1)
    if (action.kind === 'reset') return req.socket.destroy()
    if (action.kind === 'hang') return
    if (action.kind === 'respond')
      return res.writeHead(action.status, { 'content-type': 'application/json', ...action.headers }).end(action.body)
    forward(req, res, target, action.kind === 'buffer' ? action.holdMs : null)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1/shape`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

function forward(req: IncomingMessage, res: ServerResponse, target: URL, holdMs: number | null): void {
  const headers = { ...req.headers, host: target.host }
  const upstream = httpRequest(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
    (response) => {
      if (holdMs === null) {
        res.writeHead(response.statusCode ?? 502, response.headers)
        response.pipe(res)
        return
      }
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      const flush = () => {
        if (res.writableEnded) return
        const body = Buffer.concat(chunks)
        const { 'transfer-encoding': _chunked, ...rest } = response.headers
        res.writeHead(response.statusCode ?? 502, { ...rest, 'content-length': String(body.length) }).end(body)
        upstream.destroy()
      }
      const timer = setTimeout(flush, holdMs)
      response.on('end', () => {
        clearTimeout(timer)
        flush()
      })
    }
  )
  upstream.on('error', () => res.destroy())
  res.on('close', () => upstream.destroy())
  req.pipe(upstream)
}
