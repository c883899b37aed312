import type { z } from 'zod'
import {
  ClientMetadataUrlSchema,
  McpServerEntrySchema,
  McpServerNameSchema,
  type McpServerConfig,
  type McpSource,
  type McpToolError
} from '../../../shared/contract/mcp'
import { expandPlaceholders, type ExpandContext } from './expand'
import { jsonSyntaxProblem } from './json-file'

export type SourceKind = McpSource['kind']
export type FileFormat = NonNullable<McpSource['format']>

/** One named entry of a file: a valid config, or the error that keeps it out of service. */
export type ParsedEntry =
  | { name: string; ok: true; config: McpServerConfig; raw: Record<string, unknown> }
  | { name: string; ok: false; error: McpToolError; raw: Record<string, unknown> | null }

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
  basePath: (string | number)[],
  source: string | null,
  format: FileFormat,
  context: ExpandContext
): Promise<ParsedEntry> {
  const path = [...basePath, name]
  const nameCheck = McpServerNameSchema.safeParse(name)
  if (!isObject(raw))
    return { name, ok: false, raw: null, error: configError(`${path.join('.')}: an entry is an object`, path, source) }
  if (!nameCheck.success)
    return {
      name,
      ok: false,
      raw,
      error: configError(`${path.join('.')}: ${nameCheck.error.issues[0]?.message}`, path, source)
    }
  const imported = format === 'servers' ? raw : importForeignEntry(raw)
  const scoped: ExpandContext = {
    ...context,
    secret: (kind, id) => context.secret(kind, kind === 'keychain' ? `${name}:${id}` : id)
  }
  const expanded = await expandPlaceholders(imported, scoped, path)
  const firstIssue = expanded.issues[0]
  if (firstIssue)
    return {
      name,
      ok: false,
      raw,
      error: configError(`${firstIssue.path.join('.')}: ${firstIssue.message}`, firstIssue.path, source)
    }
  const parsed = McpServerEntrySchema.safeParse(expanded.value)
  if (!parsed.success) {
    // A `*Ref` key explains the missing inline secret next to it, so it is the problem to report.
    const issue =
      parsed.error.issues.find((candidate) => candidate.code === 'unrecognized_keys') ?? parsed.error.issues[0]
    const described = describeIssue(issue as z.core.$ZodIssue, path)
    return { name, ok: false, raw, error: configError(described.message, described.path, source) }
  }
  return { name, ok: true, raw, config: { ...parsed.data, name } }
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
  context: ExpandContext
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
  const entries = await Promise.all(
    Object.entries(map).map(([name, raw]) => parseEntry(name, raw, basePath, path, format, context))
  )
  if (kind !== 'settings') return { format, entries, error: topLevelError }
  const { url, error } = clientMetadataUrlOf(root.mcp)
  return { format, entries, error: topLevelError ?? error, clientMetadataUrl: url }
}

function clientMetadataUrlOf(mcp: unknown): { url: string | null; error: string | null } {
  const value = isObject(mcp) ? mcp.clientMetadataUrl : undefined
  if (value === undefined || value === null) return { url: null, error: null }
  const parsed = ClientMetadataUrlSchema.safeParse(value)
  return parsed.success
    ? { url: parsed.data, error: null }
    : { url: null, error: `mcp.clientMetadataUrl ${parsed.error.issues[0]?.message ?? 'is invalid'}` }
}
