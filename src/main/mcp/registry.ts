import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { McpServerConfig } from '../../shared/contract/mcp-config'
import type { McpEntry, McpRpcMessage, McpToolError, McpToolInfo, OAuthExchange } from '../../shared/contract/mcp'
import type { ToolFilter } from '../../shared/contract/mcp-tool-filter'
import type { CallbackParams } from './auth/callback-server'
import { Logins } from './auth/logins'
import { transportOf } from './config/parse'
import type { Connection } from './connection/connection'
import { HttpConnection } from './connection/http'
import { DEFAULT_RESTART } from './connection/machine'
import { StdioConnection } from './connection/stdio'
import { stdioSpawnSpec, type StdioSpawnSpec } from './connection/stdio-spawn'
import { Elicitations } from './elicitation'
import {
  configHash,
  refusal,
  type Entry,
  type EntryBook,
  type InvalidEntry,
  type Origin,
  type RegistryConfig,
  type RegistryOptions
} from './entry'
import { McpFailure, toToolError } from './errors'
import { loginPath } from './login-path'
import { maskSecrets } from './mask'
import { RpcLog } from './rpc-log'
import { Sessions } from './session'
import { ToolCalls, type TracedCall } from './tools/calls'

/**
 * The MCP servers a host knows: their entries (config, origin, connection), kept in step with the config applied. Its
 * capabilities live beside it: tool calls (tools/calls.ts), sessions (session.ts), the OAuth logins (auth/logins.ts).
 */
export class Registry implements EntryBook {
  private readonly entries = new Map<string, Entry>()
  private readonly rpcLogs = new Map<string, RpcLog>()
  readonly elicitations: Elicitations
  private readonly logins: Logins
  private readonly calls: ToolCalls
  private closed = false
  /** The connects of the last applyConfig (in the background, with connectInBackground). */
  private connecting: Promise<unknown> = Promise.resolve()

  constructor(private readonly options: RegistryOptions = {}) {
    this.elicitations = new Elicitations((elicitation) => this.options.onElicitation?.(elicitation))
    this.logins = new Logins(this, options)
    const sessions = new Sessions(this, (name, scope) => this.logins.stepUp(name, scope))
    this.calls = new ToolCalls(this, sessions, (name) => this.rpcLog(name))
  }

  /** Adds or replaces one server; an unchanged config keeps its connection. HTTP servers connect now, stdio on first use. */
  async addServer(config: McpServerConfig, origin?: Origin): Promise<McpEntry> {
    await this.upsert(config, origin ?? null)
    await this.warm(config.name)
    return this.describe(config.name)
  }

  /** Declarative: servers not named are removed, changed ones reconnect, unchanged ones keep their connections. */
  async applyConfig(config: RegistryConfig): Promise<McpEntry[]> {
    if (config.clientMetadataUrl !== undefined) this.logins.clientMetadataUrl = config.clientMetadataUrl
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
      tokens: entry.config?.auth?.mode === 'authorizationCode' ? this.logins.tokenStatus(name) : null
    }
  }

  tools(name: string): Promise<McpToolInfo[]> {
    return this.calls.tools(name)
  }

  /** The tools as last listed, without asking the server (null: not listed since it connected). */
  knownTools(name: string): McpToolInfo[] | null {
    return this.calls.knownTools(name)
  }

  /** Which tools other hosts get through `syncscope mcp run` (none: all). */
  toolFilter(name: string): ToolFilter | undefined {
    return this.calls.toolFilter(name)
  }

  /** Calls one tool; `timeoutMs` (else the server's, else 30 s) aborts the request and cancels it on the server. */
  callTool(
    name: string,
    tool: string,
    args: Record<string, unknown> = {},
    options: { timeoutMs?: number } = {}
  ): Promise<CallToolResult> {
    return this.calls.callTool(name, tool, args, options)
  }

  /** A tool call as a developer debugs it (see ToolCalls.traceCall). */
  traceCall(
    name: string,
    tool: string,
    args: Record<string, unknown> = {},
    options: { timeoutMs?: number } = {}
  ): Promise<TracedCall> {
    return this.calls.traceCall(name, tool, args, options)
  }

  /** Calls a tool by its `mcp__<server>__<tool>` name. */
  callPrefixed(
    prefixed: string,
    args: Record<string, unknown> = {},
    options: { timeoutMs?: number } = {}
  ): Promise<CallToolResult> {
    return this.calls.callPrefixed(prefixed, args, options)
  }

  rpcMessages(name: string): McpRpcMessage[] {
    return this.rpcLogs.get(name)?.list() ?? []
  }

  private rpcLog(name: string): RpcLog {
    let log = this.rpcLogs.get(name)
    if (!log) this.rpcLogs.set(name, (log = new RpcLog((message) => this.options.onRpcMessage?.(name, message))))
    return log
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
    const refused = refusal(entry)
    if (refused) throw refused
    if (entry.config!.transport === 'stdio') {
      const path = await loginPath()
      return {
        transport: 'stdio',
        spawn: stdioSpawnSpec(entry.config!, this.options.workspaceRoot ?? process.cwd(), path.path),
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
    this.logins.forget(name)
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

  /** Starts the authorization-code login in the browser (see Logins.login). */
  login(name: string, options: { scope?: string } = {}): Promise<{ authorizeUrl: string }> {
    return this.logins.login(name, options)
  }

  /** Resolves when the login in flight finishes: null when connected, else its error. */
  waitForLogin(name: string): Promise<McpToolError | null> {
    return this.logins.waitForLogin(name)
  }

  /** The redirect back from the browser (see Logins.completeLogin). */
  completeLogin(name: string, params: CallbackParams): Promise<{ ok: boolean; message: string }> {
    return this.logins.completeLogin(name, params)
  }

  /** Forgets the tokens (the host deletes persisted ones); the entry goes back to needs-login. */
  async logout(name: string): Promise<McpEntry> {
    await this.logins.logout(name)
    return this.describe(name)
  }

  oauthExchanges(name: string): OAuthExchange[] {
    return this.logins.oauthExchanges(name)
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all([...this.entries.values()].map((entry) => entry.connection?.close()))
    this.entries.clear()
    await this.logins.close()
  }

  entry(name: string): Entry {
    const entry = this.entries.get(name)
    if (!entry) throw new McpFailure('unknown_server', `no MCP server named '${name}'`)
    return entry
  }

  has(name: string): boolean {
    return this.entries.has(name)
  }

  names(): Iterable<string> {
    return this.entries.keys()
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
    const authorizationCode = config.transport === 'http' && config.auth.mode === 'authorizationCode'
    // the client id an authorization-code entry presents is part of its connection
    const hash = authorizationCode ? `${configHash(config)}|${this.logins.clientMetadataUrl ?? ''}` : configHash(config)
    const previous = this.entries.get(config.name)
    if (config.transport === 'http' && config.auth.mode === 'authorizationCode')
      this.logins.seed(config.name, config.auth)
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
        : new HttpConnection(config, await this.logins.wiring(entry, config), onChange)
    connection.prepare = (client) => {
      this.rpcLog(config.name).watch(client)
      client.registerCapabilities({ elicitation: { form: {} } })
      client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
        this.elicitations.ask(config.name, request.params, extra.signal)
      )
    }
    return connection
  }

  /** HTTP servers connect right away so the list shows connected / needs-login; stdio waits for its first call. */
  async warm(name: string, force = false): Promise<void> {
    const entry = this.entries.get(name)
    if (!entry?.connection || this.closed) return
    if ((entry.config?.transport === 'stdio' || this.options.connectOnDemand) && !force) return
    await entry.connection.client().catch(() => {})
  }

  changed(names: string[]): void {
    if (!this.closed) this.options.onChange?.(names)
  }
}

function withoutCallbacks(config: McpServerConfig): Record<string, unknown> {
  return JSON.parse(JSON.stringify(config)) as Record<string, unknown>
}
