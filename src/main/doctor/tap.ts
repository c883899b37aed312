import {
  request as httpRequest,
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse
} from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import { writeAtomically } from '../fs/atomic-write'
import { hostAllowed } from '../headless/guard'
import { DEFAULT_MAX_CONNECTIONS, limitConnections } from '../net/connection-limit'
import { BodyRecorder, type HarEntry, MAX_BODY_CHARS, TapRecording, headerList, newEntry } from './tap-recording'

/** Hop-by-hop headers (RFC 9110 §7.6.1) are the tap's own business on each side. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate'
])

export interface TapOptions {
  upstream: string
  host: string
  port: number
  /** The HAR file the tap (re)writes after every exchange. */
  out: string
  /** Open connections served at once; more are answered 503. */
  maxConnections?: number
  log?: (line: string) => void
}

export interface RunningTap {
  url: string
  /** The latest exchanges recorded, within the recording's bounds. */
  entries: HarEntry[]
  /** Writes the HAR once more and stops; open streams are cut. */
  close(): Promise<void>
}

/** The end-to-end headers of a message: hop-by-hop ones and those its `Connection` names are left out. */
const endToEnd = (headers: IncomingHttpHeaders): Record<string, string | string[]> => {
  const connectionTokens = new Set(
    String(headers.connection ?? '')
      .toLowerCase()
      .split(',')
      .map((token) => token.trim())
  )
  return Object.fromEntries(
    Object.entries(headers).filter(
      (pair): pair is [string, string | string[]] =>
        pair[1] !== undefined && !HOP_BY_HOP.has(pair[0]) && !connectionTokens.has(pair[0])
    )
  )
}

/**
 * Where a request goes upstream: its origin-form path under the upstream's path, on the upstream's origin. Anything
 * else (`//host/…`, `http://host/…`, `*`, a path climbing out of the upstream's path) would make the tap a forward
 * proxy to whatever the caller names: a string saying why it is refused.
 */
function upstreamTarget(upstream: URL, basePath: string, requestTarget: string): URL | string {
  if (!requestTarget.startsWith('/') || requestTarget.startsWith('//') || requestTarget.includes('\\'))
    return `the tap forwards only to ${upstream.origin}: the request target must be a path starting with a single /, not ${JSON.stringify(requestTarget.slice(0, 200))}`
  const query = requestTarget.indexOf('?')
  const target = new URL(upstream.href)
  target.pathname = `${basePath}${query < 0 ? requestTarget : requestTarget.slice(0, query)}`
  target.search = query < 0 ? '' : requestTarget.slice(query)
  target.hash = ''
  const underBase = basePath === '' || target.pathname === basePath || target.pathname.startsWith(`${basePath}/`)
  if (target.origin !== upstream.origin || !underBase)
    return `the request path leaves ${upstream.origin}${basePath}: the tap forwards only paths under it`
  return target
}

/**
 * `syncscope tap`: a transparent recording proxy between an app and its shape service. Every byte passes through as it
 * arrives (SSE and long-polls are never buffered); each exchange is recorded with its timings and SSE frame arrival
 * times and the HAR file is rewritten, for `syncscope doctor` to read.
 */
export async function startTap(options: TapOptions): Promise<RunningTap> {
  const upstream = new URL(options.upstream)
  const basePath = upstream.pathname.replace(/\/$/, '')
  const log = options.log ?? (() => {})
  const recording = new TapRecording(log)
  let writing = Promise.resolve()
  let pending = false
  const save = () => {
    if (pending) return
    pending = true
    writing = writing.then(async () => {
      pending = false
      await writeAtomically(options.out, recording.toJson(), 0o600).catch((error: Error) =>
        log(`tap: cannot write ${options.out}: ${error.message}`)
      )
    })
  }
  const open = new Set<ServerResponse>()

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (!hostAllowed({ bindHost: options.host, allowedHosts: [] }, req.headers.host)) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          message: `the tap answers only requests for itself (Host ${req.headers.host ?? 'missing'} refused)`,
          code: 'foreign_host'
        })
      )
      return
    }
    const target = upstreamTarget(upstream, basePath, req.url ?? '')
    if (typeof target === 'string') {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ message: target, code: 'invalid_request_target' }))
      return
    }
    const started = Date.now()
    const requestBody: Buffer[] = []
    const entry: HarEntry = newEntry(req, target, started)
    let finished = false
    const finish = (error?: string) => {
      if (finished) return
      finished = true
      const ended = Date.now() - started
      entry.time = ended
      if (entry.timings.wait >= 0) entry.timings.receive = ended - entry.timings.wait
      if (error) entry.response._error = error
      if (requestBody.length > 0)
        entry.request.postData = {
          mimeType: String(req.headers['content-type'] ?? ''),
          text: Buffer.concat(requestBody).toString('utf8').slice(0, MAX_BODY_CHARS)
        }
      recording.add(entry)
      save()
    }
    open.add(res)
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest
    const outgoing = send(
      target,
      { method: req.method, headers: { ...endToEnd(req.headers), host: target.host } },
      (answer) => {
        entry.timings.wait = Date.now() - started
        entry.response.status = answer.statusCode ?? 0
        entry.response.statusText = answer.statusMessage ?? ''
        entry.response.headers = headerList(answer.headers)
        entry.response.content.mimeType = String(answer.headers['content-type'] ?? '')
        const sse = entry.response.content.mimeType.startsWith('text/event-stream')
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers))
        res.flushHeaders()
        const body = new BodyRecorder(entry, started, String(answer.headers['content-encoding'] ?? ''), sse)
        answer.on('data', (chunk: Buffer) => {
          res.write(chunk)
          entry.response.content.size += chunk.length
          entry.response.bodySize += chunk.length
          body.write(chunk)
        })
        answer.on('end', () => {
          res.end()
          void body.end().then(() => finish())
        })
        answer.on('error', (error) => {
          res.destroy()
          finish(`the upstream broke off: ${error.message}`)
        })
      }
    )
    outgoing.on('error', (error) => {
      if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            message: `the tap could not reach ${upstream.origin}: ${error.message}`,
            code: 'upstream_unreachable'
          })
        )
      finish(`upstream: ${error.message}`)
    })
    res.on('close', () => {
      open.delete(res)
      if (!res.writableFinished) {
        outgoing.destroy()
        finish('the client closed the connection')
      }
    })
    req.on('data', (chunk: Buffer) => {
      if (entry.request.bodySize < MAX_BODY_CHARS) requestBody.push(chunk)
      entry.request.bodySize += chunk.length
    })
    req.pipe(outgoing)
  }

  const server: Server = createServer((req, res) => {
    if (!refusedOverLimit(req, res)) handle(req, res)
  })
  const refusedOverLimit = limitConnections(server, {
    max: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    name: 'the tap'
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const host = options.host.includes(':') ? `[${options.host}]` : options.host
  save()
  return {
    url: `http://${host}:${port}`,
    get entries() {
      return recording.entries
    },
    async close() {
      // Each cut stream is recorded by its own 'close' handler: wait for those before the last write.
      await Promise.all([...open].map((res) => new Promise((resolve) => res.once('close', resolve).destroy())))
      await new Promise<void>((resolve) => server.close(() => resolve()))
      save()
      await writing
    }
  }
}
