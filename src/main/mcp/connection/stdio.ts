import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { McpStdioServerConfig, McpToolError } from '../../../shared/contract/mcp'
import { McpFailure, toToolError } from '../errors'
import { loginPath } from '../login-path'
import { endGroup } from '../process-group'
import { BaseConnection, DEFAULT_RESTART, type RestartPolicy } from './connection'
import { stdioSpawnSpec, type StdioSpawnSpec } from './stdio-spawn'
import { stdioTransport, type StdioTransport } from './stdio-transport'

const STDERR_LINES = 40
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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
