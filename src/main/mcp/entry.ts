import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { McpServerConfig, SourceKind } from '../../shared/contract/mcp-config'
import type { McpElicitation, McpEntry, McpRpcMessage, McpToolError, OAuthExchange } from '../../shared/contract/mcp'
import type { AuthorizationCodeConfig } from './auth/authorization-code'
import type { FetchLike } from './auth/oauth-log'
import type { TokenRecord } from './auth/refresh-coordinator'
import type { Connection } from './connection/connection'
import type { RestartPolicy } from './connection/machine'
import { McpFailure } from './errors'

/** Where an entry came from, for the list (provenance, shadowing, the entry as written). */
export interface Origin {
  source: SourceKind
  sourcePath: string | null
  shadows: Array<{ source: SourceKind; path: string | null }>
  raw: Record<string, unknown> | null
}

export interface InvalidEntry {
  name: string
  error: McpToolError
  origin?: Origin
}

export interface RegistryConfig {
  servers: McpServerConfig[]
  /** Entries that failed validation: listed in error state, never connected. */
  invalid?: InvalidEntry[]
  origins?: ReadonlyMap<string, Origin>
  /** The app's client ID metadata document URL from now on (null: none); authorizationCode entries reconnect when it changes. */
  clientMetadataUrl?: string | null
}

export interface RegistryOptions {
  /** Expanded for `${workspaceRoot}` in stdio args and used as their default cwd. */
  workspaceRoot?: string
  /** Opens the authorisation URL in a browser (Electron: shell.openExternal; headless: a new tab via the UI). */
  openAuthorizeUrl?: (url: string, server: string) => void | Promise<void>
  /** Servers added by the host, below every config file (a file's entry of the same name wins). */
  extraMcpServers?: McpServerConfig[]
  /**
   * The app's client_id as an HTTPS URL of its client ID metadata document (see clientMetadataDocument): used with
   * authorisation servers that accept one; others get dynamic registration, or the entry's configured client.
   */
  clientMetadataUrl?: string
  /** Pre-built OAuth client providers that `oauthProviderRef` names (mutual TLS and other special cases). */
  oauthProviders?: ReadonlyMap<string, OAuthClientProvider>
  restartPolicy?: RestartPolicy
  /** applyConfig returns before HTTP servers have answered (the app must not wait on a slow server to start). */
  connectInBackground?: boolean
  /** No connection until a server is used (the CLI's one-server commands: the others must cost nothing). */
  connectOnDemand?: boolean
  fetch?: FetchLike
  onChange?: (names: string[]) => void
  onOAuthExchange?: (server: string, exchange: OAuthExchange) => void
  onRpcMessage?: (server: string, message: McpRpcMessage) => void
  /** A server asks the person something: show it, answer with `answerElicitation`. */
  onElicitation?: (elicitation: McpElicitation) => void
  /** A server's persisted tokens and their cross-process lock: refreshes are coordinated through it. */
  tokenRecord?: (server: string) => TokenRecord | null
  /** After "log out" cleared the in-memory tokens: the host deletes the persisted ones. */
  onLogout?: (server: string) => Promise<void>
}

/** One server the registry knows. */
export interface Entry {
  name: string
  config: McpServerConfig | null
  invalid: McpToolError | null
  origin: Origin | null
  hash: string
  connection: Connection | null
  oauth: { provider: OAuthClientProvider; config: AuthorizationCodeConfig | null } | null
  tools: Tool[] | null
}

/** What the registry's capabilities (tool calls, sessions, logins) ask of it. */
export interface EntryBook {
  /** The entry of that name; an `unknown_server` failure when there is none. */
  entry(name: string): Entry
  has(name: string): boolean
  names(): Iterable<string>
  describe(name: string): McpEntry
  /** Drops the connection (clearing a crash loop) and connects again. */
  reconnect(name: string): Promise<McpEntry>
  /** Connects now, unless the entry waits for its first use (`force`: now in any case). */
  warm(name: string, force?: boolean): Promise<void>
  changed(names: string[]): void
}

/** Why nothing of the entry runs (a config it refused, or disabled), else null. */
export function refusal(entry: Entry): McpFailure | null {
  if (entry.invalid)
    return new McpFailure(entry.invalid.code, entry.invalid.message, {
      ...(entry.invalid.path ? { path: entry.invalid.path } : {})
    })
  if (!entry.config || entry.config.disabled) return new McpFailure('transport_error', `${entry.name} is disabled`)
  return null
}

/** A stable fingerprint of everything that needs a new connection; callbacks, seed tokens and the tool filter are not. */
export function configHash({ tools: _filter, ...config }: McpServerConfig): string {
  return JSON.stringify(config, (key, value: unknown) => {
    if (typeof value === 'function' || key === 'tokens' || key === 'client') return undefined
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)))
    }
    return value
  })
}
