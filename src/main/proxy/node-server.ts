import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { hostAllowed } from '../headless/guard'
import { readRequestBytes, RequestBodyError } from '../net/request-body'
import { DEFAULT_MAX_CONNECTIONS, limitConnections } from '../net/connection-limit'
import { MAX_BODY_BYTES } from './request-body'

export type FetchHandler = (request: Request) => Promise<Response>

export interface NodeFetchServer {
  readonly url: string
  readonly port: number
  close(): Promise<void>
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
  res.end(JSON.stringify({ error: { code, message } }))
}

function toHeaders(req: IncomingMessage): Headers {
  const headers = new Headers()
  for (let index = 0; index < req.rawHeaders.length; index += 2) {
    const name = req.rawHeaders[index] as string
    const value = req.rawHeaders[index + 1] as string
    // two Authorization headers are ambiguous; the proxy sees them joined and refuses the malformed value
    headers.append(name, value)
  }
  return headers
}

/** Writes a web Response to Node, chunk by chunk as it arrives, so long-polls and SSE pass through unbuffered. */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    headers[name] = name === 'set-cookie' ? response.headers.getSetCookie() : value
  })
  res.writeHead(response.status, response.statusText, headers)
  res.flushHeaders()
  if (!response.body) {
    res.end()
    return
  }
  const reader = response.body.getReader()
  res.once('close', () => void reader.cancel().catch(() => undefined))
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (res.destroyed) return
    res.write(value)
  }
  res.end()
}

/**
 * Serves a fetch-style handler on loopback (or `host`); a client that goes away aborts the request's signal. A Host
 * that does not name this server (DNS rebinding) is refused before the handler sees the request.
 */
export async function serveFetchHandler(
  handler: FetchHandler,
  options: {
    host: string
    allowedHosts?: readonly string[]
    port: number
    /** Open connections served at once (`--max-connections`). */
    maxConnections?: number
    log: (line: string) => void
  }
): Promise<NodeFetchServer> {
  const hosts = { bindHost: options.host, allowedHosts: options.allowedHosts ?? [] }
  const server: Server = createServer((req, res) => {
    if (refusedOverLimit(req, res)) return
    if (!hostAllowed(hosts, req.headers.host)) {
      return sendError(
        res,
        403,
        'foreign_host',
        `Host '${req.headers.host ?? ''}' is not this proxy: call it as localhost or 127.0.0.1 (or allow the name with --allowed-host)`
      )
    }
    const abort = new AbortController()
    res.once('close', () => {
      if (!res.writableFinished) abort.abort()
    })
    void (async () => {
      const method = req.method ?? 'GET'
      const read =
        method === 'GET' || method === 'HEAD'
          ? null
          : await readRequestBytes(req, MAX_BODY_BYTES).catch((error: unknown) => error)
      if (read instanceof RequestBodyError) return sendError(res, read.status, read.code, read.message)
      if (read !== null && !Buffer.isBuffer(read)) throw read
      const body = read
      const target = req.url ?? ''
      // the Host header never takes part in routing: the path is read from the request line alone
      if (!target.startsWith('/'))
        return sendError(res, 400, 'invalid_request_target', 'the request target must be a path')
      const request = new Request(`http://localhost${target}`, {
        method,
        headers: toHeaders(req),
        body: body && body.length > 0 ? body : undefined,
        signal: abort.signal
      })
      await writeResponse(await handler(request), res)
    })().catch((error: unknown) => {
      if (abort.signal.aborted) return res.destroy()
      options.log(`proxy: ${(error as Error).message}`)
      if (!res.headersSent) sendError(res, 500, 'internal_error', 'internal error')
      else res.destroy()
    })
  })
  const refusedOverLimit = limitConnections(server, {
    max: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    name: 'the proxy'
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
