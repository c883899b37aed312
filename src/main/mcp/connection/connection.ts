import { existsSync } from 'node:fs'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { McpHttpServerConfig, McpStdioServerConfig, McpToolError } from '../../../shared/contract/mcp'
import type { FetchLike } from '../auth/oauth-log'
import { expandWorkspaceRoot } from '../config/expand'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { McpFailure, toToolError } from '../errors'
import { loginPath } from '../login-path'
import { endGroup } from '../process-group'
import { stdioTransport, type StdioTransport } from './stdio-transport'

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'needs-login' | 'error'

export const CLIENT_INFO = { name: 'syncscope', version: '0.1.0' }

/** A live link to one MCP server: made on demand, shared by every call, reported through `onChange`. */
export interface Connection {
  readonly state: ConnectionState
  readonly error: McpToolError | null
  readonly pid: number | null
  readonly restarts: number
  /** Something the entry works despite (the login shell's PATH unknown). */
  readonly warning: string | null
  prepare: (client: Client) => void
  client(): Promise<Client>
  /** Drops the live link (and its process); the next `client()` makes a new one. */
  reset(): Promise<void>
  close(): Promise<void>
}

export interface RestartPolicy {
  /** Delay before the first restart; doubled for each further crash in the window. */
  baseDelayMs: number
  maxDelayMs: number
  /** This many crashes within `windowMs` make a crash loop: the entry stays in error until reconnected. */
  maxCrashes: number
  windowMs: number
}

export const DEFAULT_RESTART: RestartPolicy = { baseDelayMs: 250, maxDelayMs: 5_000, maxCrashes: 5, windowMs: 60_000 }
const STDERR_LINES = 40
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

abstract class BaseConnection implements Connection {
  state: ConnectionState = 'idle'
  error: McpToolError | null = null
  warning: string | null = null
  restarts = 0
  protected current: Client | null = null
  protected connecting: Promise<Client> | null = null
  /** The client whose `initialize` is in flight: close() aborts it rather than leave it running. */
  protected opening: Client | null = null
  protected closed = false

  /** Set by the registry: capabilities and handlers (elicitation) a client needs before it connects. */
  prepare: (client: Client) => void = () => {}

  constructor(protected readonly onChange: () => void) {}

  protected newClient(): Client {
    const client = new Client(CLIENT_INFO, { capabilities: {} })
    this.prepare(client)
    return client
  }

  get pid(): number | null {
    return null
  }

  protected set(state: ConnectionState, error: McpToolError | null = null): void {
    this.state = state
    this.error = error
    this.onChange()
  }

  async client(): Promise<Client> {
    if (this.closed) throw new McpFailure('transport_error', 'the connection is closed')
    if (this.current) return this.current
    this.connecting ??= this.open().finally(() => (this.connecting = null))
    return this.connecting
  }

  protected abstract open(): Promise<Client>

  async reset(): Promise<void> {
    const client = this.current
    this.current = null
    if (client) await client.close().catch(() => {})
    this.set('idle')
  }

  async close(): Promise<void> {
    this.closed = true
    const client = this.current
    this.current = null
    await Promise.all([client?.close().catch(() => {}), this.opening?.close().catch(() => {})])
  }

  /** `initialize` within the server's timeout; a server that stays silent fails with a `timeout` naming it. */
  protected async initialize(client: Client, transport: Transport, name: string, timeoutMs: number): Promise<void> {
    this.opening = client
    try {
      await client.connect(transport, { timeout: timeoutMs })
    } catch (error) {
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new McpFailure('timeout', `${name} did not answer initialize within ${timeoutMs} ms`)
      }
      throw error
    } finally {
      this.opening = null
    }
  }
}

export interface StdioSpawnSpec {
  command: string
  args: string[]
  env: Record<string, string>
  cwd?: string
}

/**
 * How a stdio server is started: `${workspaceRoot}` expanded, the SDK's safe environment (PATH: the login shell's,
 * when given) plus the entry's, and the configured cwd (which must exist), else the workspace when there is one on disk.
 */
export function stdioSpawnSpec(config: McpStdioServerConfig, workspaceRoot: string, path?: string): StdioSpawnSpec {
  const { command, args = [], env = {} } = config
  let cwd: string | undefined
  if (config.cwd) {
    cwd = expandWorkspaceRoot(config.cwd, workspaceRoot)
    if (!existsSync(cwd)) throw new McpFailure('invalid_config', `cwd ${cwd} does not exist`, { path: ['cwd'] })
  } else if (existsSync(workspaceRoot)) {
    cwd = workspaceRoot
  }
  const base = { ...getDefaultEnvironment(), ...(path ? { PATH: path } : {}) }
  return {
    command,
    args: args.map((arg) => expandWorkspaceRoot(arg, workspaceRoot)),
    env: { ...base, ...env },
    ...(cwd ? { cwd } : {})
  }
}

/**
 * One subprocess per server, spawned on first use, restarted with backoff after a crash; too many crashes in a row
 * leave it in a `crash_loop` error that names the last stderr lines.
 */
export class StdioConnection extends BaseConnection {
  private transport: StdioTransport | null = null
  private crashes: number[] = []
  private stderr: string[] = []

  constructor(
    private readonly config: McpStdioServerConfig,
    private readonly workspaceRoot: string,
    onChange: () => void,
    private readonly policy: RestartPolicy = DEFAULT_RESTART
  ) {
    super(onChange)
  }

  override get pid(): number | null {
    return this.current ? (this.transport?.pid ?? null) : null
  }

  override async client(): Promise<Client> {
    if (this.error?.code === 'crash_loop')
      throw new McpFailure('crash_loop', this.error.message, { stderr: this.error.stderr ?? [] })
    return super.client()
  }

  protected async open(delayMs = 0): Promise<Client> {
    this.set('connecting')
    if (delayMs > 0) await sleep(delayMs)
    if (this.closed) throw new McpFailure('transport_error', 'the connection is closed')
    const { command, timeoutMs } = this.config
    const path = await loginPath()
    this.warning = path.warning
    let spawnSpec: StdioSpawnSpec
    try {
      spawnSpec = stdioSpawnSpec(this.config, this.workspaceRoot, path.path)
    } catch (error) {
      this.set('error', toToolError(error))
      throw error
    }
    const transport = stdioTransport(spawnSpec)
    transport.stderr?.on('data', (chunk: Buffer) => this.keepStderr(chunk.toString()))
    const client = this.newClient()
    const initializing = this.initialize(client, transport, this.config.name, timeoutMs ?? 30_000)
    // spawned synchronously by connect(): the pid is known now, and kept to end the group if initialize fails
    const pid = transport.pid
    try {
      await initializing
    } catch (error) {
      await Promise.all([client.close().catch(() => {}), endGroup(pid)])
      if (error instanceof McpFailure && error.code === 'timeout') {
        this.set('error', { ...error.toToolError(), stderr: [...this.stderr] })
        throw new McpFailure('timeout', error.message, { stderr: [...this.stderr] })
      }
      const failure = this.crashed(`could not start \`${command}\`: ${(error as Error).message}`)
      throw new McpFailure(failure.code, failure.message, { stderr: failure.stderr ?? [] })
    }
    client.onclose = () => this.exited(client)
    this.transport = transport
    this.current = client
    this.set('connected')
    return client
  }

  private keepStderr(text: string): void {
    this.stderr.push(...text.split('\n').filter((line) => line.trim() !== ''))
    if (this.stderr.length > STDERR_LINES) this.stderr.splice(0, this.stderr.length - STDERR_LINES)
  }

  /** Counts a crash; returns the error the entry shows now. */
  private crashed(message: string): McpToolError {
    const now = Date.now()
    this.crashes = [...this.crashes.filter((at) => now - at < this.policy.windowMs), now]
    const loop = this.crashes.length >= this.policy.maxCrashes
    const error: McpToolError = loop
      ? {
          code: 'crash_loop',
          message: `\`${this.config.command}\` crashed ${this.crashes.length} times within ${this.policy.windowMs / 1000} s; reconnect to try again (last: ${message})`,
          stderr: [...this.stderr]
        }
      : { code: 'transport_error', message, stderr: [...this.stderr] }
    this.set('error', error)
    return error
  }

  private exited(client: Client): void {
    if (this.closed || this.current !== client) return
    this.current = null
    const error = this.crashed(`\`${this.config.command}\` exited (pid ${this.transport?.pid ?? '?'})`)
    if (error.code === 'crash_loop') return
    this.restarts += 1
    const delay = Math.min(this.policy.baseDelayMs * 2 ** (this.crashes.length - 1), this.policy.maxDelayMs)
    const restarting = this.open(delay).finally(() => {
      if (this.connecting === restarting) this.connecting = null
    })
    this.connecting = restarting
    restarting.catch(() => {})
  }

  override async reset(): Promise<void> {
    this.crashes = []
    this.stderr = []
    await super.reset()
  }
}

export interface HttpAuthWiring {
  fetch: FetchLike
  authProvider?: OAuthClientProvider
  /** False when the grant needs a person first (no tokens yet): the entry shows needs-login without a request. */
  canConnect(): boolean
}

/** Streamable HTTP; a 401 the auth layer cannot recover from leaves the entry in needs-login. */
export class HttpConnection extends BaseConnection {
  constructor(
    private readonly config: McpHttpServerConfig,
    private readonly wiring: HttpAuthWiring,
    onChange: () => void
  ) {
    super(onChange)
  }

  /** A new transport to the server with this entry's headers and auth (the launcher bridges one to stdio). */
  transport(): StreamableHTTPClientTransport {
    if (!this.wiring.canConnect()) {
      this.set('needs-login')
      throw needsLogin(this.config.name)
    }
    return new StreamableHTTPClientTransport(new URL(this.config.url), {
      fetch: this.wiring.fetch,
      ...(this.wiring.authProvider ? { authProvider: this.wiring.authProvider } : {})
    })
  }

  protected async open(): Promise<Client> {
    const transport = this.transport()
    this.set('connecting')
    const client = this.newClient()
    try {
      await this.initialize(client, transport, this.config.name, this.config.timeoutMs ?? 30_000)
    } catch (error) {
      await client.close().catch(() => {})
      if (error instanceof UnauthorizedError && this.wiring.authProvider) {
        this.set('needs-login')
        throw needsLogin(this.config.name)
      }
      const failure = httpFailure(error)
      this.set('error', failure)
      const { code, message, ...extra } = failure
      throw new McpFailure(code, message, extra)
    }
    client.onclose = () => {
      if (this.current === client && !this.closed) {
        this.current = null
        this.set('idle')
      }
    }
    this.current = client
    this.set('connected')
    return client
  }
}

/** A refused credential reads as an auth problem with its HTTP status; anything else as a transport error. */
function httpFailure(error: unknown): McpToolError {
  const status = (error as { code?: unknown }).code
  if (status === 401 || status === 403) {
    return {
      code: 'auth_unavailable',
      message: `the server refused the credentials (HTTP ${status}): ${(error as Error).message}`
    }
  }
  return toToolError(error)
}

function needsLogin(name: string): McpFailure {
  return new McpFailure(
    'needs_login',
    `${name} needs a login: use "Log in" on the MCP page or run \`syncscope mcp login ${name}\``
  )
}
