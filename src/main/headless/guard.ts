import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { hostAllowed, LOOPBACK_NAMES, type HostRule } from '../net/host-rule'

export { hostAllowed, type HostRule } from '../net/host-rule'

export const TOKEN_COOKIE = 'syncscope_token'
export const TOKEN_HEADER = 'x-syncscope-token'

export type GuardVerdict = { ok: true } | { ok: false; status: 401 | 403; code: string; message: string }
type Refusal = Exclude<GuardVerdict, { ok: true }>

/** Which pages may call (and read answers of) a server from a browser. */
export type OriginRule = (origin: string) => boolean

/** `http(s)://localhost`, `127.0.0.1` or `[::1]` on any port. */
export function isLoopbackOrigin(origin: string): boolean {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return false
  }
  return (
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.origin === origin &&
    LOOPBACK_NAMES.includes(url.hostname)
  )
}

/** Loopback pages on any port, plus the listed origins (`*`: every origin). */
export function corsOriginRule(extra: readonly string[]): OriginRule {
  return (origin) => isLoopbackOrigin(origin) || extra.includes('*') || extra.includes(origin)
}

/** Only the server's own loopback origin (the UI's contract: no other page may call it). */
export function sameOriginRule(port: () => number): OriginRule {
  return (origin) => LOOPBACK_NAMES.some((name) => origin === `http://${name}:${port()}`)
}

/**
 * Host must name this server (DNS rebinding); an Origin, when sent, must pass `originAllowed` (CSRF, reading across
 * sites). A browser request without Origin that Fetch Metadata marks as coming from another site (an image, a script,
 * a link) is refused too: such a GET reaches the server even though the page cannot read the answer.
 */
export function checkHostAndOrigin(req: IncomingMessage, hosts: HostRule, originAllowed: OriginRule): GuardVerdict {
  const host = req.headers.host ?? ''
  if (!hostAllowed(hosts, host))
    return refusal(
      'foreign_host',
      `Host '${host}' is not this server: call it as localhost or 127.0.0.1 (or allow the name with --allowed-host)`
    )
  const origin = req.headers.origin
  if (origin !== undefined && !originAllowed(origin))
    return refusal(
      'foreign_origin',
      `Origin '${origin}' may not call this server: loopback pages may, others need --cors-origin`
    )
  const site = req.headers['sec-fetch-site']
  if (origin === undefined && (site === 'cross-site' || site === 'same-site')) {
    return refusal(
      'foreign_origin',
      'a request from another site without an Origin (an image, a script, a link) may not call this server'
    )
  }
  return { ok: true }
}

const refusal = (code: string, message: string): Refusal => ({ ok: false, status: 403, code, message })

/** Equal secrets, compared in constant time; an absent one never matches. */
export function sameSecret(given: string | undefined | null, secret: string): boolean {
  if (given === undefined || given === null) return false
  const a = Buffer.from(given)
  const b = Buffer.from(secret)
  return a.length === b.length && timingSafeEqual(a, b)
}

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key !== name) continue
    try {
      return decodeURIComponent(rest.join('='))
    } catch {
      return undefined
    }
  }
  return undefined
}

/**
 * The per-run token in the `x-syncscope-token` header only: what the Electron shell adds to its own window's requests.
 * A cookie does not count here, since a browser attaches it to requests from other pages of the same site.
 */
export function hasTokenHeader(req: IncomingMessage, token: string): boolean {
  const header = req.headers[TOKEN_HEADER]
  return typeof header === 'string' && sameSecret(header, token)
}

/** The per-run token, from the cookie the printed URL sets, or from a header. */
export function checkToken(req: IncomingMessage, token: string): GuardVerdict {
  const header = req.headers[TOKEN_HEADER]
  const bearer = req.headers.authorization?.replace(/^Bearer\s+/i, '')
  const given = [readCookie(req, TOKEN_COOKIE), typeof header === 'string' ? header : undefined, bearer]
  if (given.some((value) => sameSecret(value, token))) return { ok: true }
  return {
    ok: false,
    status: 401,
    code: 'missing_token',
    message: 'this app needs its access token: open the URL printed by `syncscope serve`'
  }
}
