import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'

export const TOKEN_COOKIE = 'syncscope_token'
export const TOKEN_HEADER = 'x-syncscope-token'

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]']
const WILDCARD_ADDRESSES = ['0.0.0.0', '::', '[::]', '']

export type GuardVerdict = { ok: true } | { ok: false; status: 401 | 403; code: string; message: string }
type Refusal = Exclude<GuardVerdict, { ok: true }>

/** Which `Host` values name this server: what stops a DNS-rebinding page from reaching it under its own name. */
export interface HostRule {
  /** The address the server binds (`--host`). */
  bindHost: string
  /** More names a person allowed (`--allowed-host`), e.g. the machine's LAN name. */
  allowedHosts: readonly string[]
}

/** Which pages may call (and read answers of) a server from a browser. */
export type OriginRule = (origin: string) => boolean

/** `[::1]:3000` → `[::1]`, `LocalHost:3000` → `localhost`: the name part of a Host header, lower case; null when malformed. */
function hostName(host: string): string | null {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]@/\s]+)(:\d{1,5})?$/.exec(host.trim().toLowerCase())
  return match?.[1] ?? null
}

const bracketed = (address: string) => (isIP(address) === 6 ? `[${address}]` : address)

/**
 * A Host names this server when it is a loopback name, the bound address or an allowed name, with any port (a port
 * forward may change it). Bound to a wildcard address, any IP literal is accepted too: a rebinding page reaches a
 * server only under a DNS name of its own, never under an IP literal.
 */
export function hostAllowed(rule: HostRule, host: string | undefined): boolean {
  const name = hostName(host ?? '')
  if (name === null) return false
  const bind = rule.bindHost.toLowerCase()
  const names = [
    ...LOOPBACK_NAMES,
    bracketed(bind),
    ...rule.allowedHosts.map((allowed) => bracketed(allowed).toLowerCase())
  ]
  if (names.includes(name)) return true
  return WILDCARD_ADDRESSES.includes(bind) && isIP(name.replace(/^\[(.*)\]$/, '$1')) !== 0
}

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
