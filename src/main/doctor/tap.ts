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
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { Transform } from 'node:stream'
import { SseParser } from '../../shared/shape-client/sse'
import { writeAtomically } from '../fs/atomic-write'
import { hostAllowed } from '../headless/guard'

/** Longest body text kept per exchange; the bytes themselves always pass through whole. */
const MAX_BODY_CHARS = 2_000_000
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
  log?: (line: string) => void
}

interface HarHeader {
  name: string
  value: string
}

export interface HarEntry {
  startedDateTime: string
  time: number
  request: {
    method: string
    url: string
    httpVersion: string
    headers: HarHeader[]
    queryString: HarHeader[]
    cookies: []
    headersSize: -1
    bodySize: number
    postData?: { mimeType: string; text: string }
  }
  response: {
    status: number
    statusText: string
    httpVersion: string
    headers: HarHeader[]
    cookies: []
    content: { size: number; mimeType: string; text: string }
    redirectURL: ''
    headersSize: -1
    bodySize: number
    _error?: string
  }
  cache: Record<string, never>
  timings: { send: number; wait: number; receive: number }
  _frames: Array<{ atMs: number; raw: string }>
}

export interface RunningTap {
  url: string
  entries: HarEntry[]
  /** Writes the HAR once more and stops; open streams are cut. */
  close(): Promise<void>
}

const headerList = (headers: IncomingHttpHeaders): HarHeader[] =>
  Object.entries(headers).flatMap(([name, value]) =>
    value === undefined ? [] : (Array.isArray(value) ? value : [value]).map((item) => ({ name, value: item }))
  )

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

function decoderFor(encoding: string | undefined): Transform | null {
  if (encoding === 'gzip' || encoding === 'x-gzip') return createGunzip()
  if (encoding === 'deflate') return createInflate()
  if (encoding === 'br') return createBrotliDecompress()
  return null
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
  const entries: HarEntry[] = []
  const log = options.log ?? (() => {})
  let writing = Promise.resolve()
  let pending = false
  const save = () => {
    if (pending) return
    pending = true
    writing = writing.then(async () => {
      pending = false
      await writeAtomically(
        options.out,
        JSON.stringify({ log: { version: '1.2', creator: { name: 'syncscope tap', version: '1' }, entries } }, null, 1),
        0o600
      ).catch((error: Error) => log(`tap: cannot write ${options.out}: ${error.message}`))
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
    const entry: HarEntry = {
      startedDateTime: new Date(started).toISOString(),
      time: 0,
      request: {
        method: req.method ?? 'GET',
        url: target.toString(),
        httpVersion: `HTTP/${req.httpVersion}`,
        headers: headerList(req.headers),
        queryString: [...target.searchParams].map(([name, value]) => ({ name, value })),
        cookies: [],
        headersSize: -1,
        bodySize: 0
      },
      response: {
        status: 0,
        statusText: '',
        httpVersion: 'HTTP/1.1',
        headers: [],
        cookies: [],
        content: { size: 0, mimeType: '', text: '' },
        redirectURL: '',
        headersSize: -1,
        bodySize: 0
      },
      cache: {},
      timings: { send: 0, wait: -1, receive: -1 },
      _frames: []
    }
    const finish = (error?: string) => {
      if (entries.includes(entry)) return
      const ended = Date.now() - started
      entry.time = ended
      if (entry.timings.wait >= 0) entry.timings.receive = ended - entry.timings.wait
      if (error) entry.response._error = error
      if (requestBody.length > 0)
        entry.request.postData = {
          mimeType: String(req.headers['content-type'] ?? ''),
          text: Buffer.concat(requestBody).toString('utf8').slice(0, MAX_BODY_CHARS)
        }
      entries.push(entry)
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
        const decoder = decoderFor(String(answer.headers['content-encoding'] ?? '').toLowerCase())
        const parser = new SseParser()
        const record = (chunk: Buffer) => {
          const text = chunk.toString('utf8')
          if (entry.response.content.text.length < MAX_BODY_CHARS)
            entry.response.content.text += text.slice(0, MAX_BODY_CHARS - entry.response.content.text.length)
          if (sse)
            for (const frame of parser.push(text)) entry._frames.push({ atMs: Date.now() - started, raw: frame.raw })
        }
        decoder?.on('data', record).on('error', () => {})
        answer.on('data', (chunk: Buffer) => {
          res.write(chunk)
          entry.response.content.size += chunk.length
          entry.response.bodySize += chunk.length
          if (decoder) decoder.write(chunk)
          else record(chunk)
        })
        answer.on('end', () => {
          decoder?.end()
          res.end()
          finish()
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

  const server: Server = createServer(handle)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const host = options.host.includes(':') ? `[${options.host}]` : options.host
  save()
  return {
    url: `http://${host}:${port}`,
    entries,
    async close() {
      // Each cut stream is recorded by its own 'close' handler: wait for those before the last write.
      await Promise.all([...open].map((res) => new Promise((resolve) => res.once('close', resolve).destroy())))
      await new Promise<void>((resolve) => server.close(() => resolve()))
      save()
      await writing
    }
  }
}
