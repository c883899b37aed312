import { createHash } from 'node:crypto'
import type { SourceKind } from '../config/parse'

/**
 * Who a stored secret or token belongs to: a server's name AND where it goes (`binding`), so an entry that shadows a
 * saved one under the same name, with another URL or command, finds nothing stored for it.
 */
export interface SecretOwner {
  name: string
  binding: string
  /** The layer the entry comes from: only the person's own files adopt what older versions stored by name alone. */
  source: SourceKind
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The origin and path of a URL (query and fragment do not change the server); the text itself when it does not parse. */
function urlTarget(url: unknown): string {
  const text = typeof url === 'string' ? url : ''
  if (!URL.canParse(text)) return text.replace(/[?#].*$/, '')
  const parsed = new URL(text)
  return `${parsed.origin}${parsed.pathname}`
}

/**
 * What an entry (our record, as written: placeholders unexpanded) is bound to: `http <origin+path>`, or the stdio
 * command line with its arguments, folder and environment (what changes the program that runs).
 */
export function entryBinding(entry: Record<string, unknown>): string {
  if (entry.transport === 'http') return `http ${urlTarget(entry.url)}`
  const env = isObject(entry.env) ? Object.entries(entry.env).sort(([a], [b]) => a.localeCompare(b)) : []
  return `stdio ${JSON.stringify([entry.command ?? null, entry.args ?? [], entry.cwd ?? null, env])}`
}

/** The binding as a person reads it: the URL, or the command line. */
export function bindingTarget(binding: string): string {
  if (binding.startsWith('http ')) return binding.slice(5)
  try {
    const [command, args] = JSON.parse(binding.slice(6)) as [unknown, unknown]
    return [command, ...(Array.isArray(args) ? args : [])].map(String).join(' ')
  } catch {
    return binding
  }
}

/** `github@3f2a…`: the name under which a server's secrets, tokens and client are stored. */
export function boundName(owner: Pick<SecretOwner, 'name' | 'binding'>): string {
  return `${owner.name}@${createHash('sha256').update(owner.binding).digest('hex').slice(0, 32)}`
}

export const secretAccount = (server: string, field: string) => `secret:${server}:${field}`

/** "this URL of github", "this command line of fx": in messages about what is (not) stored for an entry. */
export function describeBinding(owner: Pick<SecretOwner, 'name' | 'binding'>): string {
  return `this ${owner.binding.startsWith('http ') ? 'URL' : 'command line'} of ${owner.name}`
}
