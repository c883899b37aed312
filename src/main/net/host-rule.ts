import { isIP } from 'node:net'

export const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]']
const WILDCARD_ADDRESSES = ['0.0.0.0', '::', '[::]', '']

/** Which `Host` values name this server: what stops a DNS-rebinding page from reaching it under its own name. */
export interface HostRule {
  /** The address the server binds (`--host`). */
  bindHost: string
  /** More names a person allowed (`--allowed-host`), e.g. the machine's LAN name. */
  allowedHosts: readonly string[]
}

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
