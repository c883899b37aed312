import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

export const TOKEN_COOKIE = 'syncscope_token'
export const TOKEN_HEADER = 'x-syncscope-token'

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]']

export type GuardVerdict = { ok: true } | { ok: false; status: 401 | 403; code: string; message: string }

function sameSecret(given: string | undefined, token: string): boolean {
  if (!given) return false
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  return a.length === b.length && timingSafeEqual(a, b)
}

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key === name) return decodeURIComponent(rest.join('='))
  }
  return undefined
}

/** Host must name this server on loopback (DNS rebinding); an Origin, when sent, must be this server (CSRF). */
export function checkHostAndOrigin(req: IncomingMessage, port: number): GuardVerdict {
  const allowedHosts = LOOPBACK_NAMES.map((name) => `${name}:${port}`)
  const host = req.headers.host ?? ''
  if (!allowedHosts.includes(host)) return { ok: false, status: 403, code: 'foreign_host', message: `Host '${host}' is not this app` }
  const origin = req.headers.origin
  if (origin !== undefined && !allowedHosts.some((allowed) => origin === `http://${allowed}`)) {
    return { ok: false, status: 403, code: 'foreign_origin', message: `Origin '${origin}' may not call this app` }
  }
  return { ok: true }
}

/** The per-run token, from the cookie the printed URL sets, or from a header. */
export function checkToken(req: IncomingMessage, token: string): GuardVerdict {
  const header = req.headers[TOKEN_HEADER]
  const bearer = req.headers.authorization?.replace(/^Bearer\s+/i, '')
  const given = [readCookie(req, TOKEN_COOKIE), typeof header === 'string' ? header : undefined, bearer]
  if (given.some((value) => sameSecret(value, token))) return { ok: true }
  return { ok: false, status: 401, code: 'missing_token', message: 'this app needs its access token: open the URL printed by `syncscope serve`' }
}
