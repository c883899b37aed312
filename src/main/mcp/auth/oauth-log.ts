import { decodeJwt } from 'jose'
import { MCP_OAUTH_LOG_KEPT, type OAuthExchange } from '../../../shared/contract/mcp'
import { checkedResponse } from '../../net/checked-response'
import { McpFailure } from '../errors'

type Step = OAuthExchange['step']
export type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>

/** The most an authorisation server's answer (metadata, registration, tokens, an error) may take once decompressed. */
export const MAX_AUTH_ANSWER_BYTES = 1024 * 1024

/**
 * The response with its body read through a counter: past `MAX_AUTH_ANSWER_BYTES` (counted after decompression, as
 * fetch inflates while the body is read) the reading stops and fails naming the cap, so a small gzip body that
 * inflates to gigabytes is never held.
 */
function bounded(response: Response, method: string, url: string): Response {
  let read = 0
  return checkedResponse(response, (chunk) => {
    read += chunk.byteLength
    if (read <= MAX_AUTH_ANSWER_BYTES) return null
    const where = new URL(url)
    return new McpFailure(
      'invalid_answer',
      `the answer to ${method} ${where.origin}${where.pathname} is larger than 1 MiB once decompressed: refused`
    )
  })
}

const REDACTED_PARAMS = ['code', 'state', 'code_verifier', 'access_token', 'refresh_token', 'client_secret']

/** A URL safe to show: the values of code, state and token parameters are hidden. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    for (const key of REDACTED_PARAMS) if (parsed.searchParams.has(key)) parsed.searchParams.set(key, '…')
    return parsed.toString()
  } catch {
    return url
  }
}

function bodyText(init?: RequestInit): string {
  const body = init?.body
  if (typeof body === 'string') return body
  if (body instanceof URLSearchParams) return body.toString()
  return ''
}

function classify(
  url: string,
  init: RequestInit | undefined,
  hints: { registration: (url: string) => boolean; discovery: (url: string) => boolean }
): Step {
  const text = bodyText(init)
  if (url.includes('/.well-known/') || hints.discovery(url)) return 'discovery'
  if (/grant_type=refresh_token/.test(text)) return 'refresh'
  if (/grant_type=(authorization_code|client_credentials)/.test(text)) return 'token'
  if ((init?.method ?? 'GET') === 'POST' && (hints.registration(url) || text.includes('"redirect_uris"')))
    return 'registration'
  return 'resource'
}

/** The decoded claims of a token response's access token (iss, aud, scope, exp, …), or null when it is opaque. */
async function accessTokenClaims(response: Response): Promise<Record<string, unknown> | null> {
  try {
    const body = (await response.clone().json()) as { access_token?: unknown }
    return typeof body.access_token === 'string' ? decodeJwt(body.access_token) : null
  } catch {
    return null
  }
}

/** The HTTP exchanges of one server's OAuth flows, newest last, bounded. */
export class OAuthLog {
  private readonly exchanges: OAuthExchange[] = []
  /** Metadata URLs a resource's 401 named (RFC 9728 §5.1): read as discovery, bounded, wherever they are. */
  private readonly namedMetadata = new Set<string>()
  constructor(
    private readonly onExchange: (exchange: OAuthExchange) => void = () => {},
    private readonly limit = MCP_OAUTH_LOG_KEPT
  ) {}

  add(
    step: Step,
    method: string,
    url: string,
    status: number | null,
    note: string | null = null,
    claims: Record<string, unknown> | null = null
  ): void {
    const exchange: OAuthExchange = {
      at: new Date().toISOString(),
      step,
      method,
      url: redactUrl(url),
      status,
      note,
      ...(claims ? { claims } : {})
    }
    this.exchanges.push(exchange)
    if (this.exchanges.length > this.limit) this.exchanges.shift()
    this.onExchange(exchange)
  }

  private metadataNamed(url: string): void {
    this.namedMetadata.add(url)
    // a few at a time: a resource naming a new one in each answer grows nothing
    for (const oldest of this.namedMetadata) if (this.namedMetadata.size > 8) this.namedMetadata.delete(oldest)
  }

  list(): OAuthExchange[] {
    return [...this.exchanges]
  }

  clear(): void {
    this.exchanges.length = 0
  }

  /**
   * A fetch that records every auth exchange (discovery, registration, token, refresh) and every resource request
   * the server refused with 401/403, never a body or a header value. The bodies of auth answers (discovery,
   * registration, tokens) are read up to MAX_AUTH_ANSWER_BYTES.
   */
  recording(base: FetchLike): FetchLike {
    return async (input, init) => {
      const url = String(input)
      const step = classify(url, init, {
        registration: (candidate) => /\/(reg|register|registration)\b/.test(new URL(candidate).pathname),
        discovery: (candidate) => this.namedMetadata.has(new URL(candidate).href)
      })
      try {
        const answer = await base(input, init)
        const response = step !== 'resource' ? bounded(answer, init?.method ?? 'GET', url) : answer
        if (step !== 'resource' || response.status === 401 || response.status === 403) {
          const challenge = response.headers.get('www-authenticate')
          const named = challenge && response.status === 401 ? /resource_metadata="([^"]+)"/.exec(challenge)?.[1] : null
          if (named && URL.canParse(named)) this.metadataNamed(new URL(named).href)
          const claims =
            (step === 'token' || step === 'refresh') && response.ok ? await accessTokenClaims(response) : null
          this.add(
            step,
            init?.method ?? 'GET',
            url,
            response.status,
            challenge ? `WWW-Authenticate: ${challenge}` : null,
            claims
          )
        }
        return response
      } catch (error) {
        this.add(step, init?.method ?? 'GET', url, null, (error as Error).message)
        throw error
      }
    }
  }
}
