import { authoriseSubset } from './column-policy'
import type { LoadedConfig } from './config'
import { upstreamShapeParams, type CanonicalShape } from './shape-definition'
import { Refusal } from './refusal'
import { readSubsetBody } from './request-body'
import { grantsFor } from './subquery-grants'
import type { Caller, TokenService } from './tokens'
import { forward, upstreamUrl, type UpstreamRequestRecord, type UpstreamTarget } from './upstream'

/** What the handler works with; swapped whole when the config reloads. */
export interface ProxyRuntime {
  loaded: LoadedConfig
  tokens: TokenService
  target: UpstreamTarget
  /** This proxy's base URL as clients reach it (for the gatekeeper's answer). */
  publicUrl: string
  /** Origins of the app's own UI, allowed besides `cors.origins` (read per request: the UI's port is known late). */
  appOrigins: () => string[]
}

/** What one request did, filled in as it goes. */
export interface Exchange {
  subject: string | null
  upstream: UpstreamRequestRecord | null
}

// kept here too: the proxy's modules import it with the runtime they use
export { Refusal }

/** Names the exchange record of a response, so a tool can show the upstream request behind it. */
export const EXCHANGE_HEADER = 'x-proxy-exchange'

export function checkMethod(request: Request, allowed: string[]): void {
  if (!allowed.includes(request.method))
    throw new Refusal(405, 'method_not_allowed', `use ${allowed.join(' or ')}`, { allow: allowed.join(', ') })
}

export function varyOf(runtime: ProxyRuntime): string[] {
  const { auth } = runtime.loaded.config
  return [...(auth.header ? ['Authorization'] : []), ...(auth.cookie ? ['Cookie'] : [])]
}

export function allowedOrigin(runtime: ProxyRuntime, request: Request): string | null {
  const origin = request.headers.get('origin')
  if (origin === null) return null
  const allowed = [...runtime.loaded.config.cors.origins, ...runtime.appOrigins()]
  return allowed.includes('*') || allowed.includes(origin) ? origin : null
}

/**
 * Builds the upstream request from the shape the proxy decided and the client's protocol parameters (a subset checked
 * for `caller`), and streams the answer back.
 */
export async function forwardShape(
  runtime: ProxyRuntime,
  request: Request,
  exchange: Exchange,
  shape: CanonicalShape,
  caller: Caller,
  clientProtocol: Array<[string, string]>
): Promise<Response> {
  const method = request.method === 'POST' ? 'POST' : 'GET'
  const clientBody = method === 'POST' ? await readSubsetBody(request) : undefined
  const grants = grantsFor(runtime.loaded.tables, caller)
  const { protocol, body } = authoriseSubset(shape, grants, clientProtocol, clientBody)
  const { baseUrl } = runtime.target
  if (baseUrl === null)
    throw new Refusal(
      502,
      'upstream_not_ready',
      'the config names the local shape server as upstream, but the app server is not listening yet: retry in a moment'
    )
  const { url, record } = upstreamUrl({ ...runtime.target, baseUrl }, upstreamShapeParams(shape), protocol)
  exchange.upstream = { method, ...record }
  return forward(url, request, {
    method,
    body,
    vary: varyOf(runtime),
    allowOrigin: allowedOrigin(runtime, request),
    brand: runtime.target.headerBrand
  })
}
