import type { z } from 'zod'
import {
  ClientMetadataUrlSchema,
  McpServerEntrySchema,
  McpServerNameSchema,
  type McpServerConfig,
  type McpSource,
  type McpToolError
} from '../../../shared/contract/mcp'
import { entryBinding, type SecretOwner } from '../persistence/binding'
import { expandPlaceholders } from './expand'
import { jsonSyntaxProblem } from './json-file'

export type SourceKind = McpSource['kind']
export type FileFormat = NonNullable<McpSource['format']>

/**
 * One named entry of a file: a valid config, or the error that keeps it out of service. `binding` is what its stored
 * secrets and tokens are bound to (see persistence/binding.ts), null for an entry that is not an object.
 */
export type ParsedEntry =
  | { name: string; ok: true; config: McpServerConfig; raw: Record<string, unknown>; binding: string }
  | { name: string; ok: false; error: McpToolError; raw: Record<string, unknown> | null; binding: string | null }

/** Where placeholders of a file's entries get their values. */
export interface FileContext {
  env: NodeJS.ProcessEnv
  /** `${keychain:field}` (a secret stored for this entry: its name and binding) or `${input:id}`. */
  secret(kind: 'keychain' | 'input', id: string, owner: SecretOwner): Promise<string | undefined>
  /** Why nothing is stored for `${keychain:field}`, when the context can say more than "not in the secret store". */
  missingSecret?(field: string, owner: SecretOwner): Promise<string | undefined>
}

/** Where an entry sits: the file's layer and path, its format and the keys of its servers map. */
export interface EntryPlace {
  kind: SourceKind
  source: string | null
  format: FileFormat
  basePath: (string | number)[]
}

export interface ParsedFile {
  format: FileFormat | null
  entries: ParsedEntry[]
  /** A problem with the file as a whole (bad JSON, unknown top-level key); entries that could be read still count. */
  error: string | null
  /** settings.json's `mcp.clientMetadataUrl` (null when absent or invalid; the error says why). */
  clientMetadataUrl?: string | null
}

const OUR_TOP_LEVEL = new Set(['servers', 'inputs', '$schema'])
const HTTP_TYPES = new Set(['http', 'streamable-http', 'streamableHttp', 'sse'])

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Claude Desktop/Code, Cursor, Inspector and VS Code write `{type?, command|url, args, env, headers}`: mapped to our record. */
export function importForeignEntry(raw: Record<string, unknown>): Record<string, unknown> {
  if ('transport' in raw) return raw
  const type = typeof raw.type === 'string' ? raw.type : undefined
  if ((type && HTTP_TYPES.has(type)) || (!type && typeof raw.url === 'string')) {
    return {
      transport: 'http',
      url: raw.url,
      auth: { mode: 'none' },
      ...(isObject(raw.headers) ? { headers: raw.headers } : {})
    }
  }
  const entry: Record<string, unknown> = { transport: 'stdio', command: raw.command }
  for (const key of ['args', 'env', 'cwd'] as const) if (raw[key] !== undefined) entry[key] = raw[key]
  return entry
}

/** The transport an entry (valid or not, in any of the file formats) is meant to have. */
export function transportOf(raw: Record<string, unknown> | null): 'http' | 'stdio' | null {
  const transport = raw ? importForeignEntry(raw).transport : null
  return transport === 'http' || transport === 'stdio' ? transport : null
}

function detectFormat(root: Record<string, unknown>, servers: Record<string, unknown>): FileFormat {
  if ('mcpServers' in root && !('servers' in root)) return 'mcpServers'
  const entries = Object.values(servers).filter(isObject)
  return entries.some((entry) => 'type' in entry && !('transport' in entry)) || 'inputs' in root ? 'vscode' : 'servers'
}

function configError(message: string, path: (string | number)[], source: string | null): McpToolError {
  return { code: 'invalid_config', message, path, ...(source ? { source } : {}) }
}

function describeIssue(
  issue: z.core.$ZodIssue,
  base: (string | number)[]
): { message: string; path: (string | number)[] } {
  const path = [...base, ...issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part))]
  return { path, message: `${path.join('.')}: ${issue.message}` }
}

/** Validates one named entry: `${…}` expanded first, then the schema; the first problem becomes its error. */
export async function parseEntry(
  name: string,
  raw: unknown,
  place: EntryPlace,
  context: FileContext
): Promise<ParsedEntry> {
  const { basePath, source, format, kind } = place
  const path = [...basePath, name]
  const nameCheck = McpServerNameSchema.safeParse(name)
  if (!isObject(raw))
    return {
      name,
      ok: false,
      raw: null,
      binding: null,
      error: configError(`${path.join('.')}: an entry is an object`, path, source)
    }
  const imported = format === 'servers' ? raw : importForeignEntry(raw)
  const binding = entryBinding(imported)
  const invalid = (message: string, at: (string | number)[]): ParsedEntry => ({
    name,
    ok: false,
    raw,
    binding,
    error: configError(message, at, source)
  })
  if (!nameCheck.success) return invalid(`${path.join('.')}: ${nameCheck.error.issues[0]?.message}`, path)
  const owner: SecretOwner = { name, binding, source: kind }
  const expanded = await expandPlaceholders(
    imported,
    {
      env: context.env,
      secret: (secretKind, id) => context.secret(secretKind, id, owner),
      missingSecret: async (field) => context.missingSecret?.(field, owner)
    },
    path
  )
  const firstIssue = expanded.issues[0]
  if (firstIssue) return invalid(`${firstIssue.path.join('.')}: ${firstIssue.message}`, firstIssue.path)
  const parsed = McpServerEntrySchema.safeParse(expanded.value)
  if (!parsed.success) {
    // A `*Ref` key explains the missing inline secret next to it, so it is the problem to report.
    const issue =
      parsed.error.issues.find((candidate) => candidate.code === 'unrecognized_keys') ?? parsed.error.issues[0]
    const described = describeIssue(issue as z.core.$ZodIssue, path)
    return invalid(described.message, described.path)
  }
  return { name, ok: true, raw, binding, config: { ...parsed.data, name } }
}

/** The servers map of a file: our `servers`, VS Code's `servers` (+ `inputs`), or `mcpServers`; `mcp.servers` in settings.json. */
function serversOf(
  root: Record<string, unknown>,
  kind: SourceKind
): { map: unknown; basePath: string[]; topLevelError: string | null } {
  if (kind === 'settings') {
    const mcp = root.mcp
    return {
      map: isObject(mcp) ? (mcp.servers ?? {}) : {},
      basePath: ['mcp', 'servers'],
      topLevelError: mcp !== undefined && !isObject(mcp) ? '"mcp" must be an object' : null
    }
  }
  if ('mcpServers' in root && !('servers' in root))
    return { map: root.mcpServers, basePath: ['mcpServers'], topLevelError: null }
  const unknown = Object.keys(root).filter((key) => !OUR_TOP_LEVEL.has(key))
  return {
    map: root.servers ?? {},
    basePath: ['servers'],
    topLevelError:
      unknown.length > 0
        ? `unknown top-level ${unknown.length === 1 ? 'field' : 'fields'} ${unknown.map((key) => `"${key}"`).join(', ')} (expected "servers")`
        : null
  }
}

/** Reads a config file's text; never throws: a broken file yields an error and no entries, a broken entry an error entry. */
export async function parseConfigText(
  text: string,
  kind: SourceKind,
  path: string | null,
  context: FileContext,
  options: { withhold?: (name: string) => McpToolError } = {}
): Promise<ParsedFile> {
  let root: unknown
  try {
    root = text.trim() === '' ? {} : JSON.parse(text)
  } catch (error) {
    return { format: null, entries: [], error: `${path ?? 'config'} ${jsonSyntaxProblem(error)}` }
  }
  if (!isObject(root)) return { format: null, entries: [], error: `${path ?? 'config'} must hold a JSON object` }
  const { map, basePath, topLevelError } = serversOf(root, kind)
  if (!isObject(map))
    return { format: null, entries: [], error: `"${basePath.join('.')}" must be an object of named servers` }
  const format = kind === 'settings' ? 'servers' : detectFormat(root, map)
  const { withhold } = options
  const place: EntryPlace = { kind, source: path, format, basePath }
  const entries = await Promise.all(
    Object.entries(map).map(([name, raw]) =>
      withhold ? withheldEntry(name, raw, format, withhold(name)) : parseEntry(name, raw, place, context)
    )
  )
  if (kind !== 'settings') return { format, entries, error: topLevelError }
  const { url, error } = clientMetadataUrlOf(root.mcp)
  return { format, entries, error: topLevelError ?? error, clientMetadataUrl: url }
}

/** An entry kept out of service as written: nothing in it is expanded or checked (an unapproved workspace file). */
function withheldEntry(name: string, raw: unknown, format: FileFormat, error: McpToolError): ParsedEntry {
  if (!isObject(raw)) return { name, ok: false, raw: null, binding: null, error }
  return { name, ok: false, raw, binding: entryBinding(format === 'servers' ? raw : importForeignEntry(raw)), error }
}

function clientMetadataUrlOf(mcp: unknown): { url: string | null; error: string | null } {
  const value = isObject(mcp) ? mcp.clientMetadataUrl : undefined
  if (value === undefined || value === null) return { url: null, error: null }
  const parsed = ClientMetadataUrlSchema.safeParse(value)
  return parsed.success
    ? { url: parsed.data, error: null }
    : { url: null, error: `mcp.clientMetadataUrl ${parsed.error.issues[0]?.message ?? 'is invalid'}` }
}
