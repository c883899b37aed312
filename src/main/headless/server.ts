import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { RpcErrorBody } from '../../shared/contract/errors'
import type { EventBus } from '../events'
import type { Dispatch } from '../rpc/dispatcher'
import { checkHostAndOrigin, checkToken, sameOriginRule, sameSecret, TOKEN_COOKIE, type GuardVerdict } from './guard'
import { serveStatic } from './static-files'
import { parseJsonBody, readRequestBytes, RequestBodyError } from '../net/request-body'
import { routingPath } from '../net/request-path'
import { DEFAULT_MAX_CONNECTIONS, limitConnections } from '../net/connection-limit'

/** A route anyone on loopback may call without the app token (the shape API, OAuth callbacks). */
export interface PublicRoute {
  prefix: string
  handle(req: IncomingMessage, res: ServerResponse): void | Promise<void>
}

export interface HeadlessServerOptions {
  host: string
  /** Host names accepted besides loopback and `host` (`--allowed-host`). */
  allowedHosts?: readonly string[]
  port: number
  token: string
  dispatch: Dispatch
  events: EventBus
  /** The built renderer; null serves no UI and no contract. */
  rendererDir: string | null
  publicRoutes: PublicRoute[]
  /** Open connections served at once (`--max-connections`); health is answered past it too. */
  maxConnections?: number
  log: (line: string) => void
}

export interface HeadlessServer {
  readonly url: string
  readonly port: number
  /** The URL that opens the UI with its access token. */
  readonly uiUrl: string | null
  close(): Promise<void>
}

// Large enough for a HAR file the sync doctor reads (`doctor.analyze`, at most 40 MB of text).
const MAX_BODY_BYTES = 64 * 1024 * 1024
const RPC_PREFIX = '/rpc/'
/** The shape server's health check, answered even past the connection limit. */
const HEALTH = '/v1/health'

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
  res.end(JSON.stringify(body))
}

const errorBody = (code: string, message: string): RpcErrorBody => ({ error: { code, message } })

function refuse(res: ServerResponse, verdict: Exclude<GuardVerdict, { ok: true }>): void {
  sendJson(res, verdict.status, errorBody(verdict.code, verdict.message))
}

async function readJsonBody(
  req: IncomingMessage
): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  try {
    return { ok: true, value: parseJsonBody(await readRequestBytes(req, MAX_BODY_BYTES)) ?? {} }
  } catch (error) {
    if (error instanceof RequestBodyError) return { ok: false, status: error.status, message: error.message }
    throw error
  }
}

export async function startHeadlessServer(options: HeadlessServerOptions): Promise<HeadlessServer> {
  let port = options.port
  const hosts = { bindHost: options.host, allowedHosts: options.allowedHosts ?? [] }
  const sameOrigin = sameOriginRule(() => port)

  async function handleRpc(req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
    if (req.method !== 'POST') return sendJson(res, 405, errorBody('method_not_allowed', 'calls are POST requests'))
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
      return sendJson(res, 415, errorBody('unsupported_media_type', 'calls take Content-Type: application/json'))
    }
    const body = await readJsonBody(req)
    if (!body.ok) return sendJson(res, body.status, errorBody('invalid_body', body.message))
    const result = await options.dispatch(name, body.value)
    if (result.ok) sendJson(res, 200, { result: result.value })
    else sendJson(res, result.status, result.body)
  }

  function handleEvents(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' })
    res.write(': connected\n\n')
    const unsubscribe = options.events.subscribe((name, payload) =>
      res.write(`data: ${JSON.stringify({ name, payload })}\n\n`)
    )
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000)
    req.on('close', () => {
      clearInterval(keepAlive)
      unsubscribe()
    })
  }

  /** Only this run's token becomes the cookie: a link with any other value must not plant one. */
  function openWithToken(url: URL, res: ServerResponse): void {
    if (!sameSecret(url.searchParams.get('token'), options.token)) {
      return sendJson(
        res,
        401,
        errorBody(
          'invalid_token',
          'this is not the access token of this run: open the URL printed by `syncscope serve`'
        )
      )
    }
    res.writeHead(303, {
      location: '/',
      'set-cookie': `${TOKEN_COOKIE}=${encodeURIComponent(options.token)}; HttpOnly; SameSite=Strict; Path=/`,
      'cache-control': 'no-store'
    })
    res.end()
  }

  async function handleApp(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const place = checkHostAndOrigin(req, hosts, sameOrigin)
    if (!place.ok) return refuse(res, place)
    if (req.method === 'GET' && url.searchParams.has('token')) return openWithToken(url, res)
    const token = checkToken(req, options.token)
    if (!token.ok) return refuse(res, token)
    if (url.pathname.startsWith(RPC_PREFIX)) return handleRpc(req, res, url.pathname.slice(RPC_PREFIX.length))
    if (url.pathname === '/events' && req.method === 'GET') return handleEvents(req, res)
    if (req.method !== 'GET' || !options.rendererDir)
      return sendJson(res, 404, errorBody('not_found', `no route for ${req.method} ${url.pathname}`))
    return serveStatic(options.rendererDir, url.pathname, res)
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(`http://localhost${req.url ?? '/'}`)
    const path = routingPath(url.pathname)
    const publicRoute = options.publicRoutes.find((candidate) => path.startsWith(candidate.prefix))
    if (publicRoute) return publicRoute.handle(req, res)
    if (options.rendererDir === null)
      return sendJson(res, 404, errorBody('not_found', `no route for ${req.method} ${url.pathname}`))
    return handleApp(req, res, url)
  }

  // Room for long shape URLs, so the shape API can answer an over-long one with its own 414 rather than Node's bare 431.
  const server: Server = createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    if (refusedOverLimit(req, res)) return
    route(req, res).catch((error: unknown) => {
      options.log(`headless server: ${(error as Error).message}`)
      if (!res.headersSent) sendJson(res, 500, errorBody('internal_error', 'internal error'))
      else res.end()
    })
  })
  const refusedOverLimit = limitConnections(server, {
    max: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    name: 'the Syncscope server',
    exempt: (req) =>
      routingPath(new URL(`http://localhost${req.url ?? '/'}`).pathname, { trailingSlash: 'drop' }) === HEALTH
  })
  // Clients reuse connections between chained shape requests; a short idle timeout races them into ECONNRESET.
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => resolve())
  })
  port = (server.address() as AddressInfo).port
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`
  return {
    url,
    port,
    uiUrl: options.rendererDir ? `${url}/?token=${options.token}` : null,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
