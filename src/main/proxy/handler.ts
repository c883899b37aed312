import { AuthError } from './tokens'
import { BodyError } from './request-body'
import { ParamError } from './request-params'
import { gatekeeper, TOKEN_PROXY_PATH } from './gatekeeper'
import { namedShape } from './named-shape'
import { allowedOrigin, EXCHANGE_HEADER, Refusal, varyOf, type Exchange, type ProxyRuntime } from './runtime'
import { ShapeDefinitionError } from './shape-definition'
import { tokenProxy } from './token-proxy'
import { UpstreamUnreachable, type UpstreamRequestRecord } from './upstream'

export type { ProxyRuntime } from './runtime'
export { EXCHANGE_HEADER } from './runtime'

/** One request the proxy answered, for the playground. */
export interface ProxyExchange {
  /** Also sent to the client as the `x-proxy-exchange` response header. */
  id: string
  at: string
  method: string
  path: string
  status: number
  subject: string | null
  code: string | null
  message: string | null
  upstream: UpstreamRequestRecord | null
}

export type ProxyHandler = (request: Request) => Promise<Response>

const NAMED_SHAPE_PATH = /^\/api\/shapes\/([A-Za-z0-9_-]+)$/
const GATEKEEPER_PATH = /^\/gatekeeper\/([^/]+)$/

function refusalResponse(runtime: ProxyRuntime, request: Request, refusal: Refusal): Response {
  const headers = new Headers({
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    ...refusal.headers
  })
  const vary = varyOf(runtime)
  const origin = allowedOrigin(runtime, request)
  if (origin !== null) {
    headers.set('access-control-allow-origin', origin)
    headers.set('access-control-expose-headers', 'vary, www-authenticate')
    vary.push('Origin')
  }
  if (vary.length > 0) headers.set('vary', vary.join(', '))
  return new Response(JSON.stringify({ error: { code: refusal.code, message: refusal.message } }), {
    status: refusal.status,
    headers
  })
}

function asRefusal(error: unknown): Refusal {
  if (error instanceof Refusal) return error
  if (error instanceof AuthError)
    return new Refusal(401, error.code, error.message, { 'www-authenticate': `Bearer error="invalid_token"` })
  if (error instanceof ParamError || error instanceof BodyError)
    return new Refusal(error.status, error.code, error.message)
  if (error instanceof ShapeDefinitionError) return new Refusal(400, 'invalid_shape', error.message)
  if (error instanceof UpstreamUnreachable) return new Refusal(502, 'upstream_unreachable', error.message)
  throw error
}

function preflight(runtime: ProxyRuntime, request: Request): Response {
  const headers = new Headers({ vary: 'Origin' })
  const origin = allowedOrigin(runtime, request)
  if (origin !== null) {
    headers.set('access-control-allow-origin', origin)
    headers.set('access-control-allow-methods', 'GET, POST, OPTIONS')
    headers.set('access-control-allow-headers', 'authorization, content-type, if-none-match, traceparent')
    headers.set('access-control-max-age', '86400')
  }
  return new Response(null, { status: 204, headers })
}

function route(runtime: ProxyRuntime, request: Request, exchange: Exchange): Promise<Response> {
  const path = new URL(request.url).pathname
  const named = NAMED_SHAPE_PATH.exec(path)
  const gate = GATEKEEPER_PATH.exec(path)
  const known = Boolean(named || gate || path === TOKEN_PROXY_PATH)
  if (known && request.method === 'OPTIONS') return Promise.resolve(preflight(runtime, request))
  if (named?.[1]) return namedShape(runtime, request, exchange, named[1])
  if (gate?.[1]) return gatekeeper(runtime, request, exchange, gate[1])
  if (path === TOKEN_PROXY_PATH) return tokenProxy(runtime, request, exchange)
  throw new Refusal(
    404,
    'not_found',
    `no proxy route ${path}: the routes are /api/shapes/<name>, POST /gatekeeper/<table> and ${TOKEN_PROXY_PATH}`
  )
}

/**
 * The proxy as one web-standard handler: `/api/shapes/<name>` (proxy auth), `POST /gatekeeper/<table>` and
 * `/proxy/v1/shape` (gatekeeper auth). `runtime()` is read per request, so a reloaded config applies to the next one.
 */
export function createProxyHandler(
  runtime: () => ProxyRuntime,
  onExchange: (exchange: ProxyExchange) => void = () => {}
): ProxyHandler {
  return async (request) => {
    const current = runtime()
    const exchange: Exchange = { subject: null, upstream: null }
    let response: Response
    let refusal: Refusal | null = null
    try {
      response = await route(current, request, exchange)
    } catch (error) {
      refusal = asRefusal(error)
      response = refusalResponse(current, request, refusal)
    }
    const id = crypto.randomUUID()
    response.headers.set(EXCHANGE_HEADER, id)
    onExchange({
      id,
      at: new Date().toISOString(),
      method: request.method,
      path: new URL(request.url).pathname,
      status: response.status,
      subject: exchange.subject,
      code: refusal?.code ?? null,
      message: refusal?.message ?? null,
      upstream: exchange.upstream
    })
    return response
  }
}
