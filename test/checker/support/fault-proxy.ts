import { createServer, request as upstreamRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Transform } from 'node:stream'
import { parseCacheControl } from '../../../src/shared/shape-client/cache'

/** A request on its way to the shape server; a fault may change any part of it. */
export interface Asked {
  method: string
  url: URL
  headers: Record<string, string>
  body: Buffer
}

/** A complete answer; a fault may change it, or give one of its own. */
export interface Answer {
  status: number
  headers: Record<string, string>
  body: Buffer
}

/** A shared cache in front of the server, keyed by `key` (null: not stored), as broken as its options say. */
export interface CacheFault {
  key: (asked: Asked) => string | null
  /** Stores every 200 and serves it for ever, whatever its cache-control says. */
  ignoreCacheControl?: boolean
  /** Serves a stored answer to any Origin, although it says `Vary: Origin`. */
  ignoreVary?: boolean
  /**
   * Stores an answer this long after it was sent, and misses meanwhile: nginx renames its temp file into the cache once
   * the upstream's answer is complete, and a busy one does so after its client has already asked the next URL.
   */
  storeAfterMs?: number
}

/** One way of breaking the protocol; every part is optional, the rest passes through untouched. */
export interface Fault {
  /** Changes the request before it goes on; an Answer answers it here, `hold` never answers, `reset` drops the connection. */
  request?: (asked: Asked) => Asked | Answer | 'hold' | 'reset' | void
  /** Changes a complete answer (everything but an event stream). */
  answer?: (answer: Answer, asked: Asked) => Answer | void
  /** Changes an event stream: its head, and the bytes as they come (a Transform per stream). */
  stream?: { head?: (headers: Record<string, string>) => void; pieces?: () => Transform }
  cache?: CacheFault
}

export interface FaultProxy {
  /** The shape endpoint as seen through `mode`'s fault: `<proxy>/<mode>/v1/shape`. */
  endpoint(mode: string): string
  close(): Promise<void>
}

interface Stored {
  answer: Answer
  at: number
  origin: string | undefined
}

const isAnswer = (value: unknown): value is Answer =>
  typeof value === 'object' && value !== null && 'status' in value && 'body' in value

/** How long a shared cache may serve an answer without asking, per its cache-control (0: not at all). */
function freshMs(answer: Answer): number {
  if (answer.status !== 200 && answer.status !== 409) return 0
  const directives = new Map(parseCacheControl(answer.headers['cache-control'] ?? null).map((d) => [d.name, d.value]))
  if (directives.has('no-store') || directives.has('no-cache') || directives.has('private')) return 0
  return Number(directives.get('s-maxage') ?? directives.get('max-age') ?? 0) * 1000
}

class Cache {
  private readonly stored = new Map<string, Stored>()

  constructor(private readonly fault: CacheFault) {}

  lookup(asked: Asked): Answer | null {
    const key = asked.method === 'GET' ? this.fault.key(asked) : null
    const hit = key === null ? undefined : this.stored.get(key)
    if (!hit) return null
    const varies = /\borigin\b/i.test(hit.answer.headers.vary ?? '') && !this.fault.ignoreVary
    if (varies && hit.origin !== asked.headers.origin) return null
    if (!this.fault.ignoreCacheControl && Date.now() - hit.at >= freshMs(hit.answer)) return null
    return hit.answer
  }

  store(asked: Asked, answer: Answer): void {
    const delay = this.fault.storeAfterMs ?? 0
    if (delay > 0) setTimeout(() => this.storeNow(asked, answer), delay)
    else this.storeNow(asked, answer)
  }

  private storeNow(asked: Asked, answer: Answer): void {
    const key = asked.method === 'GET' ? this.fault.key(asked) : null
    if (key === null || this.stored.has(key)) return
    if (this.fault.ignoreCacheControl ? answer.status === 200 : freshMs(answer) > 0)
      this.stored.set(key, { answer, at: Date.now(), origin: asked.headers.origin })
  }
}

const headersOf = (message: IncomingMessage): Record<string, string> =>
  Object.fromEntries(
    Object.entries(message.headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value]]
    )
  )

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** A failure of the proxy or of its upstream, as a 502 naming it (never a hang a check would misread). */
function failed(res: ServerResponse, error: unknown): void {
  if (res.headersSent) return void res.destroy()
  const message = `fault proxy: ${(error as Error).message} ${(error as NodeJS.ErrnoException).code ?? ''}`.trim()
  send(res, {
    status: 502,
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify({ message }))
  })
}

function send(res: ServerResponse, answer: Answer): void {
  const headers: Record<string, string> = { ...answer.headers, 'content-length': String(answer.body.length) }
  delete headers['transfer-encoding']
  res.writeHead(answer.status, headers)
  res.end(answer.body)
}

/**
 * A fault-injecting HTTP proxy in front of a real shape server: `/<mode>/v1/shape…` goes to the server's `/v1/shape…`
 * with `faults[mode]` applied, so every mode runs side by side against one server.
 */
export async function startFaultProxy(upstream: string, faults: Record<string, Fault>): Promise<FaultProxy> {
  const target = new URL(upstream)
  const caches = new Map(Object.entries(faults).flatMap(([mode, f]) => (f.cache ? [[mode, new Cache(f.cache)]] : [])))
  const sockets = new Set<Socket>()

  const forward = (asked: Asked, res: ServerResponse, fault: Fault, cache: Cache | undefined): void => {
    const out = upstreamRequest(
      {
        host: target.hostname,
        port: target.port,
        method: asked.method,
        path: `${asked.url.pathname}${asked.url.search}`,
        headers: { ...asked.headers, host: target.host, 'content-length': String(asked.body.length) }
      },
      (reply) => {
        const headers = headersOf(reply)
        if ((headers['content-type'] ?? '').startsWith('text/event-stream')) {
          fault.stream?.head?.(headers)
          delete headers['content-length']
          res.writeHead(reply.statusCode ?? 502, headers)
          res.flushHeaders()
          const pieces = fault.stream?.pieces?.()
          ;(pieces ? reply.pipe(pieces) : reply).pipe(res)
          res.once('close', () => reply.destroy())
          return
        }
        readAll(reply)
          .then((body) => {
            const received: Answer = { status: reply.statusCode ?? 502, headers, body }
            const answer = fault.answer?.(received, asked) ?? received
            cache?.store(asked, answer)
            send(res, answer)
          })
          .catch((error: unknown) => failed(res, error))
      }
    )
    out.on('error', (error) => failed(res, error))
    res.once('close', () => out.destroy())
    out.end(asked.body)
  }

  const server = createServer((req, res) => {
    const [, mode = '', ...rest] = (req.url ?? '/').split('/')
    const fault = faults[mode]
    if (!fault) return send(res, { status: 404, headers: {}, body: Buffer.from(`no fault mode '${mode}'`) })
    void readAll(req)
      .then((body) => {
        const url = new URL(`/${rest.join('/')}`, upstream)
        const received: Asked = { method: req.method ?? 'GET', url, headers: headersOf(req), body }
        const asked = fault.request?.(received) ?? received
        if (asked === 'hold') return
        if (asked === 'reset') return req.socket.destroy()
        if (isAnswer(asked)) return send(res, asked)
        const cache = caches.get(mode)
        const hit = cache?.lookup(asked)
        if (hit) return send(res, hit)
        forward(asked, res, fault, cache)
      })
      .catch((error: unknown) => failed(res, error))
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: (mode) => `http://127.0.0.1:${port}/${mode}/v1/shape`,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
