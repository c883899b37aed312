import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { McpToolError } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'

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

export abstract class BaseConnection implements Connection {
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
