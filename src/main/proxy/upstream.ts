/** Building the upstream shape request and passing its response back, streamed, with the proxy's headers. */

import { exposedProtocolHeaders, protocolHeaderNames, type HeaderBrand } from '../../shared/protocol'

export interface UpstreamTarget {
  /** Base URL of the shape service (`/v1/shape` is appended); null when the config names the local server and it is not known. */
  baseUrl: string | null
  secret?: string
  /** Server-owned extras such as `source_id`. */
  params: Record<string, string>
  headerBrand: HeaderBrand
}

/** One request the proxy sent upstream, as the playground shows it (secret masked). */
export interface UpstreamRequestRecord {
  method: string
  url: string
  /** Query keys the proxy set itself (never from the client). */
  serverParams: string[]
}

const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade'
]
/** The fetch layer has decompressed the body, so these would describe bytes the client never gets. */
const STALE_AFTER_DECOMPRESSION = ['content-encoding', 'content-length']
/**
 * A compressed upstream answer is cut past this many bytes once decompressed: a small gzip or brotli body must not make
 * the proxy inflate and send gigabytes. Ten times the reference's 10 MiB chunk (shape answers are one chunk at most);
 * uncompressed answers pass whole, byte for byte.
 */
export const MAX_DECOMPRESSED_BYTES = 100 * 1024 * 1024
/** Client request headers that mean something to the shape service; credentials, cookies and Host never go upstream. */
const FORWARDED_REQUEST_HEADERS = ['accept', 'if-none-match', 'content-type', 'traceparent']

/** Response headers a browser client may read besides the protocol's and the CORS-safelisted ones: what caches key on. */
export const EXPOSED_CACHE_HEADERS = ['etag', 'vary']

const MASK = '********'

/** The upstream URL: the shape definition and secret from the proxy, then the client's protocol parameters. */
export function upstreamUrl(
  target: UpstreamTarget & { baseUrl: string },
  shapeParams: Array<[string, string]>,
  protocol: Array<[string, string]>
): { url: URL; record: Omit<UpstreamRequestRecord, 'method'> } {
  const url = new URL('v1/shape', target.baseUrl.endsWith('/') ? target.baseUrl : `${target.baseUrl}/`)
  const serverParams: Array<[string, string]> = [...shapeParams, ...Object.entries(target.params)]
  if (target.secret !== undefined) serverParams.push(['secret', target.secret])
  for (const [key, value] of [...serverParams, ...protocol]) url.searchParams.append(key, value)
  const shown = new URL(url)
  if (target.secret !== undefined) shown.searchParams.set('secret', MASK)
  return { url, record: { url: shown.toString(), serverParams: serverParams.map(([key]) => key) } }
}

export interface ForwardOptions {
  method: 'GET' | 'POST'
  /** POST subset body, forwarded byte for byte. */
  body?: Uint8Array
  vary: string[]
  /** The Origin to allow (already checked against the config), or null for no CORS headers. */
  allowOrigin: string | null
  brand: UpstreamTarget['headerBrand']
}

/** Headers of the proxy's own response: upstream's, less hop-by-hop, stale encoding and upstream CORS, plus Vary and exposure. */
export function responseHeaders(
  upstream: Headers,
  options: Pick<ForwardOptions, 'vary' | 'allowOrigin' | 'brand'>
): Headers {
  const headers = new Headers()
  upstream.forEach((value, name) => {
    if (
      HOP_BY_HOP.includes(name) ||
      STALE_AFTER_DECOMPRESSION.includes(name) ||
      name.startsWith('access-control-') ||
      name === 'set-cookie' ||
      name === 'vary'
    )
      return
    headers.append(name, value)
  })
  const vary = new Set([
    ...(upstream.get('vary') ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
    ...options.vary
  ])
  if (options.allowOrigin !== null) {
    vary.add('Origin')
    headers.set('access-control-allow-origin', options.allowOrigin)
    headers.set(
      'access-control-expose-headers',
      [...exposedProtocolHeaders(protocolHeaderNames(options.brand)), ...EXPOSED_CACHE_HEADERS].join(',')
    )
  }
  if (vary.size > 0) headers.set('vary', [...vary].join(', '))
  if ((headers.get('content-type') ?? '').startsWith('text/event-stream')) headers.set('x-accel-buffering', 'no')
  return headers
}

export class UpstreamUnreachable extends Error {
  override readonly name = 'UpstreamUnreachable'
}

/** Sends the request and returns the upstream response re-headed, its body streamed through untouched. */
export async function forward(url: URL, request: Request, options: ForwardOptions): Promise<Response> {
  const headers = new Headers()
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = request.headers.get(name)
    if (value !== null) headers.set(name, value)
  }
  if (options.method === 'POST') headers.set('content-type', 'application/json')
  let upstream: Response
  try {
    upstream = await fetch(url, {
      method: options.method,
      headers,
      body: options.method === 'POST' ? options.body : undefined,
      signal: request.signal,
      redirect: 'manual'
    })
  } catch (error) {
    if (request.signal.aborted) throw error
    throw new UpstreamUnreachable(
      `the shape service at ${url.origin} did not answer: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`
    )
  }
  return new Response(capDecompressed(upstream, url.origin), {
    status: upstream.status,
    statusText: upstream.statusText,
    headers: responseHeaders(upstream.headers, options)
  })
}

/** The upstream body, erroring (which cuts the response) once a compressed one passes MAX_DECOMPRESSED_BYTES. */
function capDecompressed(upstream: Response, origin: string): ReadableStream<Uint8Array> | null {
  const encoding = (upstream.headers.get('content-encoding') ?? '').trim().toLowerCase()
  if (!upstream.body || encoding === '' || encoding === 'identity') return upstream.body
  let bytes = 0
  return upstream.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength
        if (bytes <= MAX_DECOMPRESSED_BYTES) controller.enqueue(chunk)
        else
          controller.error(
            new Error(
              `the ${encoding} answer of ${origin} passed ${MAX_DECOMPRESSED_BYTES / 1024 / 1024} MiB once decompressed: cut there`
            )
          )
      }
    })
  )
}
