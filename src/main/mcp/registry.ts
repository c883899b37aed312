import { auth, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  type CallToolResult,
  type Tool
} from '@modelcontextprotocol/sdk/types.js'
import type {
  McpElicitation,
  McpEntry,
  McpHttpServerConfig,
  McpRpcMessage,
  McpServerConfig,
  McpToolError,
  McpToolInfo,
  OAuthClientInfo,
  OAuthExchange,
  OAuthTokens
} from '../../shared/contract/mcp'
import type { ToolFilter } from '../../shared/contract/mcp-tool-filter'
import {
  AuthorizationCodeProvider,
  guardResource,
  sameIssuer,
  seedOAuthState,
  statesMatch,
  type AuthorizationCodeConfig,
  type OAuthState
} from './auth/authorization-code'
import { CallbackListeners, type CallbackParams } from './auth/callback-server'
import { ClientCredentials } from './auth/client-credentials'
import { apiKeyHeader, fetchWithHeaders } from './auth/headers'
import { resourceChallenge } from './auth/resource-challenge'
import { OAuthLog, type FetchLike } from './auth/oauth-log'
import { coordinatedRefresh, type TokenRecord } from './auth/refresh-coordinator'
import { transportOf, type SourceKind } from './config/parse'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  CLIENT_INFO,
  DEFAULT_RESTART,
  HttpConnection,
  StdioConnection,
  stdioSpawnSpec,
  type Connection,
  type HttpAuthWiring,
  type RestartPolicy,
  type StdioSpawnSpec
} from './connection'
import { Elicitations } from './elicitation'
import { loginPath } from './login-path'
import { McpFailure, toToolError } from './errors'
import { schemaViolations } from './json-schema'
import { maskSecrets, tokenStatus } from './mask'
import { prefixedToolName, serverOfPrefixedName } from './naming'
import { RpcLog, type RpcExchange } from './rpc-log'

export const DEFAULT_TIMEOUT_MS = 30_000
/** How long a tool call that needs a wider scope waits for the person to finish the login in the browser. */
const STEP_UP_WAIT_MS = 300_000

/** The most resource links of one result that are read. */
const MAX_LINKS = 10

export interface FollowedLink {
  uri: string
  contents?: unknown
  error?: string
}

export interface TracedCall {
  result?: CallToolResult
  error?: McpFailure
  rpc: RpcExchange | null
  outputErrors: string[] | null
  links: FollowedLink[]
}

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

interface Entry {
  name: string
  config: McpServerConfig | null
  invalid: McpToolError | null
  origin: Origin | null
  hash: string
  connection: Connection | null
  oauth: { provider: OAuthClientProvider; config: AuthorizationCodeConfig | null } | null
  tools: Tool[] | null
}

/** A stable fingerprint of everything that needs a new connection; callbacks, seed tokens and the tool filter are not. */
function configHash({ tools: _filter, ...config }: McpServerConfig): string {
  return JSON.stringify(config, (key, value: unknown) => {
    if (typeof value === 'function' || key === 'tokens' || key === 'client') return undefined
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)))
    }
    return value
  })
}

/** The MCP servers a host knows: their connections, tools, OAuth state and errors. */
export class Registry {
  private readonly entries = new Map<string, Entry>()
  private readonly oauthStates = new Map<string, OAuthState>()
  private readonly oauthLogs = new Map<string, OAuthLog>()
  private readonly rpcLogs = new Map<string, RpcLog>()
  readonly elicitations: Elicitations
  private readonly loginWaiters = new Map<string, Array<(error: McpToolError | null) => void>>()
  private readonly callbacks = new CallbackListeners((server, params) => this.completeLogin(server, params))
  private readonly fetchFn: FetchLike
  private clientMetadataUrl: string | null
  private closed = false
  /** The connects of the last applyConfig (in the background, with connectInBackground). */
  private connecting: Promise<unknown> = Promise.resolve()

  constructor(private readonly options: RegistryOptions = {}) {
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init))
    this.clientMetadataUrl = options.clientMetadataUrl ?? null
    this.elicitations = new Elicitations((elicitation) => this.options.onElicitation?.(elicitation))
  }

  /** Adds or replaces one server; an unchanged config keeps its connection. HTTP servers connect now, stdio on first use. */
  async addServer(config: McpServerConfig, origin?: Origin): Promise<McpEntry> {
    await this.upsert(config, origin ?? null)
    await this.warm(config.name)
    return this.describe(config.name)
  }

  /** Declarative: servers not named are removed, changed ones reconnect, unchanged ones keep their connections. */
  async applyConfig(config: RegistryConfig): Promise<McpEntry[]> {
    if (config.clientMetadataUrl !== undefined) this.clientMetadataUrl = config.clientMetadataUrl
    const extras = (this.options.extraMcpServers ?? []).filter(
      (extra) =>
        !config.servers.some((s) => s.name === extra.name) && !config.invalid?.some((i) => i.name === extra.name)
    )
    const servers = [...config.servers, ...extras]
    const extraOrigin: Origin = { source: 'extra', sourcePath: null, shadows: [], raw: null }
    const keep = new Set([
      ...servers.map((server) => server.name),
      ...(config.invalid ?? []).map((entry) => entry.name)
    ])
    for (const name of [...this.entries.keys()]) if (!keep.has(name)) await this.remove(name)
    for (const invalid of config.invalid ?? []) await this.setInvalid(invalid)
    for (const server of servers)
      await this.upsert(server, config.origins?.get(server.name) ?? (extras.includes(server) ? extraOrigin : null))
    this.reorder([...(config.origins?.keys() ?? []), ...servers.map((server) => server.name)])
    const connecting = Promise.all(servers.map((server) => this.warm(server.name)))
    this.connecting = connecting
    if (!this.options.connectInBackground) await connecting
    return this.list()
  }

  /** Resolves once the connects the last apply started have ended, or after `withinMs`, whichever comes first. */
  async settled(withinMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)))
    await Promise.race([this.connecting, waited]).finally(() => clearTimeout(timer))
  }

  /** Entries in the order their files list them (extras last). */
  private reorder(names: string[]): void {
    const ordered = [...new Set(names)].filter((name) => this.entries.has(name))
    const rest = [...this.entries.keys()].filter((name) => !ordered.includes(name))
    const entries = [...ordered, ...rest].map((name) => [name, this.entries.get(name)!] as const)
    this.entries.clear()
    for (const [name, entry] of entries) this.entries.set(name, entry)
  }

  list(): McpEntry[] {
    return [...this.entries.keys()].map((name) => this.describe(name))
  }

  describe(name: string): McpEntry {
    const entry = this.entry(name)
    const connection = entry.connection
    const oauth = this.oauthStates.get(name)
    const state = entry.invalid
      ? entry.invalid.code === 'untrusted'
        ? 'untrusted'
        : 'error'
      : entry.config?.disabled
        ? 'disabled'
        : (connection?.state ?? 'idle')
    return {
      name,
      transport: entry.config?.transport ?? transportOf(entry.origin?.raw ?? null),
      authMode: entry.config?.auth?.mode ?? (entry.config ? 'none' : null),
      state,
      error: entry.invalid ?? (state === 'error' || state === 'needs-login' ? (connection?.error ?? null) : null),
      source: entry.origin?.source ?? 'programmatic',
      sourcePath: entry.origin?.sourcePath ?? null,
      shadows: entry.origin?.shadows ?? [],
      config:
        (maskSecrets(entry.origin?.raw ?? (entry.config ? withoutCallbacks(entry.config) : null)) as Record<
          string,
          unknown
        > | null) ?? null,
      toolCount: entry.tools?.length ?? null,
      pid: connection?.pid ?? null,
      restarts: connection?.restarts ?? 0,
      warning: connection?.warning ?? null,
      tokens:
        entry.config?.auth?.mode === 'authorizationCode'
          ? tokenStatus(oauth?.tokens?.value, oauth?.client?.value.clientId)
          : null
    }
  }

  async tools(name: string): Promise<McpToolInfo[]> {
    const tools = await this.withSession(name, async (client) => {
      const listed: Tool[] = []
      let cursor: string | undefined
      do {
        const page = await client.listTools(cursor ? { cursor } : {})
        listed.push(...page.tools)
        cursor = page.nextCursor
      } while (cursor)
      return listed
    })
    const entry = this.entry(name)
    entry.tools = tools
    this.changed([name])
    return tools.map((tool) => toolInfo(name, tool))
  }

  /** The tools as last listed, without asking the server (null: not listed since it connected). */
  knownTools(name: string): McpToolInfo[] | null {
    return this.entry(name).tools?.map((tool) => toolInfo(name, tool)) ?? null
  }

  /** Which tools other hosts get through `syncscope mcp run` (none: all). */
  toolFilter(name: string): ToolFilter | undefined {
    return this.entry(name).config?.tools
  }

  /** Calls one tool; `timeoutMs` (else the server's, else 30 s) aborts the request and cancels it on the server. */
  async callTool(
    name: string,
    tool: string,
    args: Record<string, unknown> = {},
    options: { timeoutMs?: number } = {}
  ): Promise<CallToolResult> {
    const traced = await this.traceCall(name, tool, args, options)
    if (traced.error) throw traced.error
    if (traced.outputErrors?.length) {
      throw new McpFailure(
        'server_error',
        `${prefixedToolName(name, tool)} returned structured output that violates its output schema: ${traced.outputErrors.join('; ')}`
      )
    }
    return traced.result!
  }

  /**
   * A tool call as a developer debugs it: the result (never refused for its shape), the raw JSON-RPC request and
   * response, structuredContent checked against the tool's output schema, and the resource links read.
   */
  async traceCall(
    name: string,
    tool: string,
    args: Record<string, unknown> = {},
    options: { timeoutMs?: number } = {}
  ): Promise<TracedCall> {
    const log = this.rpcLog(name)
    const mark = log.mark()
    const rpc = () =>
      log.exchange(
        mark,
        (request) =>
          request.method === 'tools/call' && (request.params as { name?: unknown } | undefined)?.name === tool
      )
    let result: CallToolResult
    try {
      result = await this.invokeTool(name, tool, args, options)
    } catch (error) {
      return {
        error: error instanceof McpFailure ? error : new McpFailure('transport_error', (error as Error).message),
        rpc: rpc(),
        outputErrors: null,
        links: []
      }
    }
    const exchange = rpc()
    return {
      result,
      rpc: exchange,
      outputErrors: await this.outputErrors(name, tool, result),
      links: await this.followLinks(name, result, options)
    }
  }

  private async invokeTool(
    name: string,
    tool: string,
    args: Record<string, unknown>,
    options: { timeoutMs?: number }
  ): Promise<CallToolResult> {
    await this.withSession(name, async (client) => client)
    const known = this.entry(name).tools
    if (known && !known.some((candidate) => candidate.name === tool)) {
      throw new McpFailure(
        'tool_not_found',
        `${name} has no tool '${tool}' (it has ${known.map((t) => t.name).join(', ') || 'none'})`
      )
    }
    const timeout = options.timeoutMs ?? this.entry(name).config?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    // client.request, not client.callTool: the SDK would throw away a result that violates the output schema, and
    // the developer needs to see that result and where it is wrong.
    try {
      return await this.withSession(name, (client) =>
        client.request({ method: 'tools/call', params: { name: tool, arguments: args } }, CallToolResultSchema, {
          timeout
        })
      )
    } catch (error) {
      if (error instanceof UnauthorizedError) throw await this.loginLost(name)
      throw this.callFailure(name, tool, timeout, error)
    }
  }

  /** null when the tool declares no output schema; else each violation (none when it conforms). */
  private async outputErrors(name: string, tool: string, result: CallToolResult): Promise<string[] | null> {
    const tools = this.entry(name).tools ?? (await this.tools(name).catch(() => null), this.entry(name).tools)
    const schema = tools?.find((candidate) => candidate.name === tool)?.outputSchema
    if (!schema) return null
    if (result.structuredContent === undefined)
      return result.isError ? [] : ['the tool has an output schema but returned no structuredContent']
    return schemaViolations(schema, result.structuredContent)
  }

  /** Reads the resources the result links to (resource_link items), each with its contents or the error. */
  private async followLinks(
    name: string,
    result: CallToolResult,
    options: { timeoutMs?: number }
  ): Promise<FollowedLink[]> {
    const uris = result.content.flatMap((part) => (part.type === 'resource_link' ? [part.uri] : [])).slice(0, MAX_LINKS)
    const timeout = options.timeoutMs ?? this.entry(name).config?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    return Promise.all(
      uris.map(async (uri) => {
        try {
          const read = await this.withSession(name, (client) => client.readResource({ uri }, { timeout }))
          return { uri, contents: read.contents }
        } catch (error) {
          return { uri, error: (error as Error).message }
        }
      })
    )
  }

  rpcMessages(name: string): McpRpcMessage[] {
    return this.rpcLogs.get(name)?.list() ?? []
  }

  private rpcLog(name: string): RpcLog {
    let log = this.rpcLogs.get(name)
    if (!log) this.rpcLogs.set(name, (log = new RpcLog((message) => this.options.onRpcMessage?.(name, message))))
    return log
  }

  /** The server refused our tokens and no refresh helped (revoked grant, a new authorisation server): needs a login. */
  private async loginLost(name: string): Promise<McpFailure> {
    await this.reconnect(name)
    const error = this.describe(name).error
    return new McpFailure(
      'needs_login',
      error?.code === 'needs_login' ? error.message : `${name} refused the stored tokens: log in again`
    )
  }

  /**
   * Step-up after a 403 insufficient_scope: a new authorisation for the scopes held plus the ones asked for (the
   * browser opens), waited for up to STEP_UP_WAIT_MS; the caller then retries once.
   */
  private async stepUp(name: string, asked: string): Promise<void> {
    const { entry, state } = this.oauthEntry(name)
    const scope = [
      ...new Set(
        [
          ...(entry.oauth?.config?.scopes ?? []),
          ...(state.tokens?.value.scope ?? '').split(' '),
          ...asked.split(' ')
        ].filter(Boolean)
      )
    ].join(' ')
    this.oauthLog(name).add(
      'resource',
      'POST',
      (entry.config as { url: string }).url,
      403,
      `insufficient_scope: re-authorising with "${scope}"`
    )
    // a host that cannot open a browser (the CLI with --no-open, a launcher) says so at once rather than wait
    if (!this.options.openAuthorizeUrl)
      throw new McpFailure(
        'insufficient_scope',
        `${name} needs the scope "${scope}" for this request, and no browser is opened here to log in`,
        { scope }
      )
    const done = this.waitForLogin(name)
    try {
      await this.login(name, { scope })
    } catch (error) {
      throw new McpFailure(
        'insufficient_scope',
        `${name} needs the scope "${scope}", which the authorisation server refused: ${(error as Error).message}`,
        { scope }
      )
    }
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<McpToolError>((resolve) => {
      timer = setTimeout(
        () => resolve({ code: 'needs_login', message: `the login did not finish within ${STEP_UP_WAIT_MS / 1000} s` }),
        STEP_UP_WAIT_MS
      )
    })
    const error = await Promise.race([done, expired]).finally(() => clearTimeout(timer))
    if (error)
      throw new McpFailure(
        error.code === 'needs_login' ? 'insufficient_scope' : error.code,
        `${name} needs the scope "${scope}": ${error.message}`,
        { scope }
      )
  }

  /**
   * Every request to a server (its initialize included): a 403 insufficient_scope steps up (a new authorisation for
   * the wider scope) and the request is tried once more.
   */
  private async withSession<T>(name: string, request: (client: Client) => Promise<T>): Promise<T> {
    try {
      return await this.inSession(name, request)
    } catch (error) {
      if (!(error instanceof McpFailure && error.code === 'insufficient_scope')) throw error
      await this.stepUp(name, error.extra.scope ?? '')
    }
    return this.inSession(name, request)
  }

  /** Runs a request; when the server restarted and forgot our session (HTTP 404), opens a new one and tries once more. */
  private async inSession<T>(name: string, request: (client: Client) => Promise<T>): Promise<T> {
    try {
      return await request(await this.client(name))
    } catch (error) {
      // sent with the old token while another call refreshed it: the tokens are new now
      if (refusedDuringRefresh(error)) return request(await this.client(name))
      if (!isExpiredSession(error)) throw error
    }
    await this.entry(name).connection?.reset()
    return request(await this.client(name))
  }

  /** Calls a tool by its `mcp__<server>__<tool>` name. */
  async callPrefixed(
    prefixed: string,
    args: Record<string, unknown> = {},
    options: { timeoutMs?: number } = {}
  ): Promise<CallToolResult> {
    const server = serverOfPrefixedName(prefixed, this.entries.keys())
    if (!server) throw new McpFailure('unknown_server', `no server matches the tool name ${prefixed}`)
    const tools = this.entry(server).tools ?? (await this.tools(server), this.entry(server).tools ?? [])
    const tool = tools.find((candidate) => prefixedToolName(server, candidate.name) === prefixed)
    if (!tool) throw new McpFailure('tool_not_found', `${server} has no tool named ${prefixed}`)
    return this.callTool(server, tool.name, args, options)
  }

  /**
   * What `syncscope mcp run` starts for a server: the stdio command with its secrets in place, or a transport to the
   * remote server with its headers and OAuth tokens (refreshed on a 401, new ones saved), to bridge to stdio.
   */
  async launch(
    name: string
  ): Promise<
    | { transport: 'stdio'; spawn: StdioSpawnSpec; warning: string | null }
    | { transport: 'http'; remote: StreamableHTTPClientTransport }
  > {
    const entry = this.entry(name)
    if (entry.invalid)
      throw new McpFailure(entry.invalid.code, entry.invalid.message, {
        ...(entry.invalid.path ? { path: entry.invalid.path } : {})
      })
    if (!entry.config || entry.config.disabled) throw new McpFailure('transport_error', `${name} is disabled`)
    if (entry.config.transport === 'stdio') {
      const path = await loginPath()
      return {
        transport: 'stdio',
        spawn: stdioSpawnSpec(entry.config, this.options.workspaceRoot ?? process.cwd(), path.path),
        warning: path.warning
      }
    }
    if (!(entry.connection instanceof HttpConnection))
      throw new McpFailure('transport_error', `${name} has no connection`)
    return { transport: 'http', remote: entry.connection.transport() }
  }

  async remove(name: string): Promise<boolean> {
    const entry = this.entries.get(name)
    if (!entry) return false
    this.entries.delete(name)
    this.elicitations.cancelAll(name)
    await entry.connection?.close()
    this.oauthStates.delete(name)
    this.oauthLogs.delete(name)
    this.rpcLogs.delete(name)
    this.changed([name])
    return true
  }

  /** Drops the connection (clearing a crash loop) and connects again. */
  async reconnect(name: string): Promise<McpEntry> {
    const entry = this.entry(name)
    await entry.connection?.reset()
    entry.tools = null
    await this.warm(name, true)
    return this.describe(name)
  }

  /**
   * Starts the authorization-code flow: discovery (where the resource's 401 names its metadata, else the well-known
   * paths), registration when needed, and the authorisation URL (opened). The scope: the one asked for (a step-up),
   * else the configured scopes, else the 401's, else what the metadata lists.
   */
  async login(name: string, options: { scope?: string } = {}): Promise<{ authorizeUrl: string }> {
    const { entry, state } = this.oauthEntry(name)
    const log = this.oauthLog(name)
    delete state.tokens
    delete state.authorizeUrl
    delete state.discovery
    const config = entry.oauth?.config
    const { url, headers } = entry.config as McpHttpServerConfig
    // A registered client is limited to the scope it registered with (it records it): register anew for a wider one.
    const registered = (state.client?.value as { scope?: unknown } | undefined)?.scope
    if (options.scope && typeof registered === 'string' && !covers(registered, options.scope)) delete state.client
    const challenge = await resourceChallenge(
      url,
      fetchWithHeaders(log.recording(this.fetchFn), headers ?? {}),
      CLIENT_INFO
    )
    const scope = options.scope ?? (config?.scopes?.length ? config.scopes.join(' ') : challenge.scope)
    const result = await auth(entry.oauth!.provider, {
      serverUrl: url,
      ...(scope ? { scope } : {}),
      ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}),
      fetchFn: log.recording(this.fetchFn)
    })
    if (result === 'AUTHORIZED') {
      await this.reconnect(name)
      return { authorizeUrl: '' }
    }
    const authorizeUrl = state.authorizeUrl
    if (!authorizeUrl)
      throw new McpFailure('auth_unavailable', `${name}: the authorisation server gave no authorisation URL`)
    log.add('authorization', 'GET', authorizeUrl, null, 'opened in the browser')
    await Promise.resolve(this.options.openAuthorizeUrl?.(authorizeUrl, name)).catch(() => {})
    return { authorizeUrl }
  }

  /** Resolves when the login in flight finishes: null when connected, else its error. */
  waitForLogin(name: string): Promise<McpToolError | null> {
    return new Promise((resolve) => this.loginWaiters.set(name, [...(this.loginWaiters.get(name) ?? []), resolve]))
  }

  /**
   * The redirect back from the browser to the callback path of `name`: `state` must match that server's request in
   * flight, and `iss` (RFC 9207) the authorisation server it went to; where that server says it sends `iss`, a callback
   * without one is refused (an answer from another authorisation server: a mix-up).
   */
  async completeLogin(name: string, params: CallbackParams): Promise<{ ok: boolean; message: string }> {
    const log = this.oauthLog(name)
    const state = this.oauthStates.get(name)
    const finish = (error: McpToolError | null, message: string) => {
      for (const resolve of this.loginWaiters.get(name) ?? []) resolve(error)
      this.loginWaiters.delete(name)
      return { ok: error === null, message }
    }
    if (!state?.pendingState || !this.entries.has(name))
      return { ok: false, message: `no login is in flight for ${name}: start the login again` }
    if (!statesMatch(state.pendingState, params.state)) {
      log.add(
        'callback',
        'GET',
        `oauth callback for ${name}`,
        400,
        'state does not match the request in flight: refused'
      )
      return { ok: false, message: 'the state parameter does not match the login in flight; start the login again' }
    }
    delete state.pendingState
    const issuerProblem = issProblem(state, params.iss)
    if (issuerProblem) {
      log.add('callback', 'GET', `oauth callback for ${name}`, 400, `${issuerProblem.note}: refused (RFC 9207)`)
      return finish({ code: 'needs_login', message: issuerProblem.message }, issuerProblem.message)
    }
    if (params.error) {
      log.add(
        'callback',
        'GET',
        `oauth callback for ${name}`,
        null,
        `${params.error}${params.errorDescription ? `: ${params.errorDescription}` : ''}`
      )
      return finish(
        { code: 'needs_login', message: `the authorisation server refused: ${params.error}` },
        `login refused: ${params.error}`
      )
    }
    if (!params.code)
      return finish({ code: 'needs_login', message: 'the callback carried no code' }, 'no authorisation code')
    log.add('callback', 'GET', `oauth callback for ${name}`, 200, 'code and state received')
    const { entry } = this.oauthEntry(name)
    try {
      await auth(entry.oauth!.provider, {
        serverUrl: (entry.config as { url: string }).url,
        authorizationCode: params.code,
        fetchFn: log.recording(this.fetchFn)
      })
      await this.reconnect(name)
    } catch (error) {
      const failure = toToolError(error, 'auth_unavailable')
      return finish(failure, `the token exchange failed: ${failure.message}`)
    }
    const described = this.describe(name)
    return finish(
      described.state === 'connected' ? null : described.error,
      described.state === 'connected'
        ? `${name} is connected.`
        : `${name}: ${described.error?.message ?? described.state}`
    )
  }

  /** Forgets the tokens (the host deletes persisted ones); the entry goes back to needs-login. */
  async logout(name: string): Promise<McpEntry> {
    const { entry, state } = this.oauthEntry(name)
    delete state.tokens
    await this.options.onLogout?.(name)
    await entry.connection?.reset()
    await this.warm(name, true)
    return this.describe(name)
  }

  oauthExchanges(name: string): OAuthExchange[] {
    return this.oauthLogs.get(name)?.list() ?? []
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all([...this.entries.values()].map((entry) => entry.connection?.close()))
    this.entries.clear()
    await this.callbacks.close()
  }

  private entry(name: string): Entry {
    const entry = this.entries.get(name)
    if (!entry) throw new McpFailure('unknown_server', `no MCP server named '${name}'`)
    return entry
  }

  private oauthEntry(name: string): { entry: Entry; state: OAuthState } {
    const entry = this.entry(name)
    if (entry.config?.transport !== 'http' || entry.config.auth.mode !== 'authorizationCode' || !entry.oauth) {
      throw new McpFailure('auth_unavailable', `${name} does not use the authorizationCode grant`)
    }
    return { entry, state: this.oauthState(name) }
  }

  private oauthState(name: string): OAuthState {
    let state = this.oauthStates.get(name)
    if (!state) this.oauthStates.set(name, (state = {}))
    return state
  }

  private oauthLog(name: string): OAuthLog {
    let log = this.oauthLogs.get(name)
    if (!log)
      this.oauthLogs.set(name, (log = new OAuthLog((exchange) => this.options.onOAuthExchange?.(name, exchange))))
    return log
  }

  private async client(name: string): Promise<Client> {
    const entry = this.entry(name)
    if (entry.invalid)
      throw new McpFailure(entry.invalid.code, entry.invalid.message, {
        ...(entry.invalid.path ? { path: entry.invalid.path } : {})
      })
    if (entry.config?.disabled) throw new McpFailure('transport_error', `${name} is disabled`)
    if (!entry.connection) throw new McpFailure('transport_error', `${name} has no connection`)
    return entry.connection.client()
  }

  private callFailure(name: string, tool: string, timeout: number, error: unknown): McpFailure {
    if (error instanceof McpFailure) return error
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      return new McpFailure(
        'timeout',
        `${prefixedToolName(name, tool)} timed out after ${timeout} ms (server ${name}, tool ${tool})`
      )
    }
    if (
      error instanceof McpError &&
      error.code === ErrorCode.InvalidParams &&
      /not found|unknown tool/i.test(error.message)
    ) {
      return new McpFailure('tool_not_found', `${name}: ${error.message}`)
    }
    if (error instanceof McpError) return new McpFailure('server_error', `${name}: ${error.message}`)
    return new McpFailure('transport_error', `${name}: ${(error as Error).message}`)
  }

  private async setInvalid(invalid: InvalidEntry): Promise<void> {
    const previous = this.entries.get(invalid.name)
    await previous?.connection?.close()
    this.entries.set(invalid.name, {
      name: invalid.name,
      config: null,
      invalid: invalid.error,
      origin: invalid.origin ?? null,
      hash: '',
      connection: null,
      oauth: null,
      tools: null
    })
    this.changed([invalid.name])
  }

  private async upsert(config: McpServerConfig, origin: Origin | null): Promise<void> {
    // the client id an authorization-code entry presents is part of its connection
    const hash =
      config.transport === 'http' && config.auth.mode === 'authorizationCode'
        ? `${configHash(config)}|${this.clientMetadataUrl ?? ''}`
        : configHash(config)
    const previous = this.entries.get(config.name)
    if (config.transport === 'http' && config.auth.mode === 'authorizationCode')
      seedOAuthState(this.oauthState(config.name), config.auth)
    if (previous && previous.hash === hash && !previous.invalid) {
      previous.origin = origin
      previous.config = config
      if (previous.oauth && config.transport === 'http' && config.auth.mode === 'authorizationCode')
        previous.oauth.config = config.auth
      return
    }
    await previous?.connection?.close()
    // read once per process, in the background now: the first spawn need not wait for the shell's rc files
    if (config.transport === 'stdio' && !config.disabled) void loginPath()
    const entry: Entry = {
      name: config.name,
      config,
      invalid: null,
      origin,
      hash,
      connection: null,
      oauth: null,
      tools: null
    }
    this.entries.set(config.name, entry)
    try {
      entry.connection = await this.connectionFor(entry, config)
    } catch (error) {
      entry.invalid = toToolError(error, 'auth_unavailable')
    }
    this.changed([config.name])
  }

  private async connectionFor(entry: Entry, config: McpServerConfig): Promise<Connection | null> {
    const onChange = () => this.changed([config.name])
    if (config.disabled) return null
    const connection =
      config.transport === 'stdio'
        ? new StdioConnection(
            config,
            this.options.workspaceRoot ?? process.cwd(),
            onChange,
            this.options.restartPolicy ?? DEFAULT_RESTART
          )
        : new HttpConnection(config, await this.httpWiring(entry, config), onChange)
    connection.prepare = (client) => {
      this.rpcLog(config.name).watch(client)
      client.registerCapabilities({ elicitation: { form: {} } })
      client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
        this.elicitations.ask(config.name, request.params, extra.signal)
      )
    }
    return connection
  }

  private async httpWiring(
    entry: Entry,
    config: Extract<McpServerConfig, { transport: 'http' }>
  ): Promise<HttpAuthWiring> {
    const log = this.oauthLog(config.name)
    const base = fetchWithHeaders(log.recording(this.fetchFn), config.headers ?? {})
    const { auth: authConfig } = config
    switch (authConfig.mode) {
      case 'none':
        return { fetch: base, canConnect: () => true }
      case 'apiKey':
        return { fetch: fetchWithHeaders(base, apiKeyHeader(authConfig)), canConnect: () => true }
      case 'clientCredentials':
        return {
          fetch: new ClientCredentials(authConfig, config.url, log.recording(this.fetchFn)).fetch(base),
          canConnect: () => true
        }
      case 'authorizationCode': {
        const provider = await this.authorizationProvider(config.name, authConfig)
        entry.oauth = { provider, config: authConfig }
        const state = this.oauthState(config.name)
        const refreshing = coordinatedRefresh(base, {
          record: authConfig.oauthProviderRef ? null : (this.options.tokenRecord?.(config.name) ?? null),
          save: (tokens) => Promise.resolve(provider.saveTokens(tokens)),
          issuer: () => state.discovery?.authorizationServerUrl ?? state.tokens?.value.issuer,
          note: (url, text) => log.add('refresh', 'POST', url, null, text)
        })
        return {
          fetch: guardResource(refreshing, config.url, state),
          authProvider: provider,
          canConnect: () => Boolean(state.tokens) || Boolean(authConfig.oauthProviderRef)
        }
      }
    }
  }

  private async authorizationProvider(name: string, config: AuthorizationCodeConfig): Promise<OAuthClientProvider> {
    if (config.oauthProviderRef) {
      const provider = this.options.oauthProviders?.get(config.oauthProviderRef)
      if (!provider)
        throw new McpFailure(
          'auth_unavailable',
          `oauthProviderRef '${config.oauthProviderRef}' names no provider the host registered`
        )
      return provider
    }
    const state = this.oauthState(name)
    const redirectUri =
      config.redirectUri ?? (await this.callbacks.redirectUri(name, registeredPort(state.client?.value)))
    if (config.redirectUri) await this.callbacks.ensureFor(config.redirectUri)
    const entryConfig = () => this.entries.get(name)?.oauth?.config ?? config
    return new AuthorizationCodeProvider(
      name,
      config,
      state,
      redirectUri,
      {
        onTokens: (tokens: OAuthTokens) => Promise.resolve(entryConfig().onTokensChanged?.(tokens)).catch(() => {}),
        onClient: (client: OAuthClientInfo) =>
          Promise.resolve(entryConfig().onClientRegistered?.(client)).catch(() => {}),
        onAuthorizeUrl: () => this.changed([name])
      },
      this.clientMetadataUrl ?? undefined
    )
  }

  /** HTTP servers connect right away so the list shows connected / needs-login; stdio waits for its first call. */
  private async warm(name: string, force = false): Promise<void> {
    const entry = this.entries.get(name)
    if (!entry?.connection || this.closed) return
    if ((entry.config?.transport === 'stdio' || this.options.connectOnDemand) && !force) return
    await entry.connection.client().catch(() => {})
  }

  private changed(names: string[]): void {
    if (!this.closed) this.options.onChange?.(names)
  }
}

/**
 * Why a callback's `iss` shows it is not the answer of the authorisation server the login went to, or null: it must
 * equal that server's issuer whenever present, and be present where its metadata advertises
 * `authorization_response_iss_parameter_supported`.
 */
function issProblem(state: OAuthState, iss: string | null): { message: string; note: string } | null {
  const metadata = state.discovery?.authorizationServerMetadata as
    { issuer?: string; authorization_response_iss_parameter_supported?: unknown } | undefined
  if (iss === null)
    return metadata?.authorization_response_iss_parameter_supported === true
      ? {
          message: 'the authorisation server sends iss (RFC 9207) and this callback has none',
          note: 'no iss although the authorisation server advertises it'
        }
      : null
  const expected = metadata?.issuer ?? state.discovery?.authorizationServerUrl
  const same = metadata?.issuer ? iss === expected : expected !== undefined && sameIssuer(iss, expected)
  return same
    ? null
    : {
        message: 'the callback came from another authorisation server',
        note: `iss ${iss} is not ${expected ?? 'the issuer of this login (unknown)'}`
      }
}

function covers(granted: string, wanted: string): boolean {
  const held = new Set(granted.split(' '))
  return wanted.split(' ').every((scope) => !scope || held.has(scope))
}

/** Streamable HTTP answers 404 to a session id the server no longer knows. */
function isExpiredSession(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404
}

/**
 * The SDK's transport marks "authorised" for all its requests at once: a request sent with the old access token
 * that is refused (401) just after a concurrent one refreshed it fails with this, though the new token would do.
 */
function refusedDuringRefresh(error: unknown): boolean {
  return (
    error instanceof StreamableHTTPError &&
    error.code === 401 &&
    error.message.includes('after successful authentication')
  )
}

function toolInfo(server: string, tool: Tool): McpToolInfo {
  return {
    name: prefixedToolName(server, tool.name),
    tool: tool.name,
    title: tool.title ?? tool.annotations?.title ?? null,
    description: tool.description ?? null,
    inputSchema: tool.inputSchema as Record<string, unknown>,
    outputSchema: (tool.outputSchema as Record<string, unknown> | undefined) ?? null
  }
}

function withoutCallbacks(config: McpServerConfig): Record<string, unknown> {
  return JSON.parse(JSON.stringify(config)) as Record<string, unknown>
}

/** The loopback port a registered client's redirect URI uses, so the next login can reuse the registration. */
function registeredPort(client: OAuthClientInfo | undefined): number | undefined {
  const uris = (client as { redirect_uris?: unknown } | undefined)?.redirect_uris
  const first = Array.isArray(uris)
    ? uris.find((uri): uri is string => typeof uri === 'string' && uri.startsWith('http://127.0.0.1:'))
    : undefined
  return first ? Number(new URL(first).port) : undefined
}
