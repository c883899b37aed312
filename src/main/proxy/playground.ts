import { decodeJwt } from 'jose'
import type { ProxyTryResult, ProxyTryInputSchema } from '../../shared/contract/proxy'
import type { z } from 'zod'
import { EXCHANGE_HEADER } from './handler'
import type { ProxyService } from './service'
import type { ProxyUser } from './config'

type TryInput = z.output<typeof ProxyTryInputSchema>
type HttpCall = NonNullable<ProxyTryResult['shape']>

const MAX_BODY_CHARS = 64 * 1024
const JWT = /eyJ[\w-]+\.[\w-]+\.[\w-]*/g

/** Tokens never reach the renderer: any JWT in text shows as its first characters only. */
export const maskTokens = (text: string) => text.replace(JWT, (token) => `${token.slice(0, 12)}…(token hidden)`)

const EXPLANATIONS: Record<string, string> = {
  missing_credentials:
    'No token was sent. The client must obtain credentials (log in, or ask the gatekeeper) and retry.',
  malformed_authorization: 'The Authorization header is not `Bearer <token>`.',
  token_expired:
    'The token has expired: a shape client goes back to the gatekeeper (or refreshes its access token) and continues with the same shape.',
  token_not_yet_valid: 'The token is not valid yet (its nbf is in the future).',
  invalid_signature: 'The token was not signed by a key this proxy trusts.',
  invalid_token: 'The token is not acceptable here (wrong issuer or audience, wrong kind of token, or no shape claim).',
  untrusted_issuer: 'The token comes from an issuer the proxy does not trust.',
  forbidden_role: 'The caller is authenticated but none of their roles may use this shape or table.',
  missing_claim: "The row filter binds a claim the caller's token does not have, so the caller cannot be scoped.",
  table_not_allowed: 'No gatekeeper policy names this table: the gatekeeper denies by default.',
  columns_not_allowed: 'The request asks for columns the table policy does not allow.',
  shape_mismatch:
    "The request's shape is not the one the token grants (after canonicalising table, columns, where and params). Ask the gatekeeper for a token for this shape."
}

function explain(status: number, body: string): string | null {
  if (status !== 401 && status !== 403) return null
  try {
    const code = (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? ''
    return EXPLANATIONS[code] ?? `${status} ${code}`
  } catch {
    return null
  }
}

/** One request to the proxy; `text` is the unmasked body, for reading the gatekeeper's answer in main. */
async function call(
  service: ProxyService,
  method: 'GET' | 'POST',
  url: string,
  token: string | null,
  body?: unknown
): Promise<{ call: HttpCall; text: string }> {
  const headers: Record<string, string> = {}
  if (token !== null) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await response.text()
  const exchangeId = response.headers.get(EXCHANGE_HEADER)
  const exchange = service.exchanges().find((candidate) => candidate.id === exchangeId)
  return {
    text,
    call: {
      method,
      url,
      status: response.status,
      headers: [...response.headers].map(([name, value]) => [name, maskTokens(value)] as [string, string]),
      body: maskTokens(text.slice(0, MAX_BODY_CHARS)),
      upstream: exchange?.upstream ?? null,
      explanation: explain(response.status, text)
    }
  }
}

function rowsOf(shape: HttpCall): ProxyTryResult['rows'] {
  if (shape.status !== 200) return null
  try {
    const messages = JSON.parse(shape.body) as unknown
    if (!Array.isArray(messages)) return null
    return messages.flatMap((message) =>
      message && typeof message === 'object' && 'value' in message
        ? [(message as { value: Record<string, unknown> }).value]
        : []
    )
  } catch {
    return null
  }
}

/** The query the reference client sends for a gatekeeper config: its params, columns quoted, then the offset. */
function shapeQuery(params: Record<string, unknown>, offset: string): URLSearchParams {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) {
    if (key === 'columns' && Array.isArray(value))
      query.set(key, value.map((column: string) => `"${column.replaceAll('"', '""')}"`).join(','))
    else if (key === 'params' && value && typeof value === 'object')
      for (const [n, v] of Object.entries(value)) query.set(`params[${n}]`, String(v))
    else query.set(key, String(value))
  }
  query.set('offset', offset)
  return query
}

/** Calls the running proxy as a configured user, the way a client would, and reports every step. */
export async function tryProxy(
  service: ProxyService,
  user: ProxyUser | null,
  input: TryInput
): Promise<ProxyTryResult> {
  const accessToken = user ? await service.tokens().mintAccessToken(user) : null
  const result: ProxyTryResult = {
    accessClaims: accessToken ? decodeJwt(accessToken) : null,
    shapeClaims: null,
    gatekeeper: null,
    shape: null,
    rows: null
  }
  if (input.target.kind === 'shape') {
    const path = `/api/shapes/${encodeURIComponent(input.target.name)}?offset=${encodeURIComponent(input.offset)}`
    result.shape = (await call(service, 'GET', `${service.url}${path}`, accessToken)).call
  } else {
    const gate = await call(
      service,
      'POST',
      `${service.url}/gatekeeper/${encodeURIComponent(input.target.table)}`,
      accessToken,
      input.target.request
    )
    result.gatekeeper = gate.call
    if (gate.call.status !== 200) return result
    const config = JSON.parse(gate.text) as {
      url: string
      params: Record<string, unknown>
      headers: { Authorization: string }
    }
    const shapeToken = config.headers.Authorization.replace(/^Bearer /, '')
    result.shapeClaims = decodeJwt(shapeToken)
    result.shape = (
      await call(service, 'GET', `${config.url}?${shapeQuery(config.params, input.offset).toString()}`, shapeToken)
    ).call
  }
  result.rows = rowsOf(result.shape)
  return result
}
