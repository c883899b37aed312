import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { hostAllowed } from '../../net/host-rule'
import { callbackPath } from './client-metadata'

export interface CallbackParams {
  code: string | null
  state: string | null
  /** RFC 9207 issuer identification. */
  iss: string | null
  error: string | null
  errorDescription: string | null
}

/** The callback of `server` (named by the path), to be matched with the login in flight for it. */
export type CallbackHandler = (server: string, params: CallbackParams) => Promise<{ ok: boolean; message: string }>

const PREFIX = callbackPath('')

function page(ok: boolean, message: string): string {
  const escaped = message.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)
  return `<!doctype html><meta charset="utf-8"><title>Syncscope — ${ok ? 'logged in' : 'login failed'}</title><body style="font-family:sans-serif;margin:3rem"><h1>${ok ? 'Logged in' : 'Login failed'}</h1><p data-testid="oauth-result">${escaped}</p><p>You can close this tab.</p></body>`
}

type ReadCallback = { server: string; params: CallbackParams } | { refused: 400 | 403 | 404; message: string }

/**
 * A request to the listener as a callback, or why it is refused: a Host other than loopback (a DNS-rebinding page
 * under its own name), another method or path, a path that is not valid percent-encoding.
 */
function readCallback(req: IncomingMessage): ReadCallback {
  const host = req.headers.host
  if (!hostAllowed({ bindHost: '127.0.0.1', allowedHosts: [] }, host))
    return { refused: 403, message: `Host '${host ?? ''}' is not this server: the OAuth redirect comes to 127.0.0.1` }
  let url: URL
  try {
    url = new URL(req.url ?? '/', 'http://127.0.0.1')
  } catch {
    return { refused: 400, message: 'not a valid callback URL' }
  }
  // every server has its own path: an answer on another path is none of its logins'
  if (req.method !== 'GET' || !url.pathname.startsWith(PREFIX) || url.pathname === PREFIX)
    return { refused: 404, message: 'not an OAuth callback (the path names the server: /oauth/callback/<server>)' }
  let server: string
  try {
    server = decodeURIComponent(url.pathname.slice(PREFIX.length))
  } catch {
    return { refused: 400, message: 'not a valid callback path (a malformed percent-escape)' }
  }
  const get = (key: string) => url.searchParams.get(key)
  return {
    server,
    params: {
      code: get('code'),
      state: get('state'),
      iss: get('iss'),
      error: get('error'),
      errorDescription: get('error_description')
    }
  }
}

/**
 * The OAuth redirect target (RFC 8252 loopback redirect): `http://127.0.0.1:<port>/oauth/callback/<server>`, one
 * listener per port, started when a server with the authorization-code grant needs a redirect URI.
 */
export class CallbackListeners {
  private readonly servers = new Map<number, Server>()
  private defaultPort: Promise<number> | null = null

  constructor(private readonly handle: CallbackHandler) {}

  /** The redirect URI for a server: on `preferredPort` when it is free (a registered client's), else any free port. */
  async redirectUri(serverName: string, preferredPort?: number): Promise<string> {
    const port =
      preferredPort && (this.servers.has(preferredPort) || (await this.tryListen(preferredPort)))
        ? preferredPort
        : await this.anyPort()
    return `http://127.0.0.1:${port}${callbackPath(serverName)}`
  }

  /** Listens on the port of an explicit loopback redirect URI; other URIs must reach the app some other way. */
  async ensureFor(redirectUri: string): Promise<void> {
    const url = new URL(redirectUri)
    if (url.protocol !== 'http:' || !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || !url.port) return
    const port = Number(url.port)
    if (!this.servers.has(port) && !(await this.tryListen(port)))
      throw new Error(`cannot listen on ${url.host} for the OAuth redirect ${redirectUri}`)
  }

  private anyPort(): Promise<number> {
    this.defaultPort ??= this.listen(0)
    return this.defaultPort
  }

  private async tryListen(port: number): Promise<boolean> {
    try {
      await this.listen(port)
      return true
    } catch {
      return false
    }
  }

  private async listen(port: number): Promise<number> {
    const server = createServer((req, res) => {
      const send = (status: number, ok: boolean, message: string) => {
        res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        res.end(page(ok, message))
      }
      const callback = readCallback(req)
      if ('refused' in callback) return send(callback.refused, false, callback.message)
      this.handle(callback.server, callback.params).then(
        (result) => send(result.ok ? 200 : 400, result.ok, result.message),
        (error: unknown) => send(500, false, (error as Error).message)
      )
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
    const bound = (server.address() as AddressInfo).port
    this.servers.set(bound, server)
    return bound
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.servers.values()].map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve())
            server.closeAllConnections()
          })
      )
    )
    this.servers.clear()
    this.defaultPort = null
  }
}
