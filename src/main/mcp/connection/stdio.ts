import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { McpStdioServerConfig } from '../../../shared/contract/mcp-config'
import { McpFailure, toToolError } from '../errors'
import { loginPath } from '../login-path'
import { endGroup } from '../process-group'
import { BaseConnection } from './connection'
import { DEFAULT_RESTART, type RestartPolicy } from './machine'
import { stdioSpawnSpec, type StdioSpawnSpec } from './stdio-spawn'
import { stdioTransport, type StdioTransport } from './stdio-transport'

const STDERR_LINES = 40
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * One subprocess per server, spawned on first use, restarted with backoff after a crash; too many crashes in a row
 * leave it in a `crash_loop` error that names the last stderr lines (the machine counts them).
 */
export class StdioConnection extends BaseConnection {
  private transport: StdioTransport | null = null
  private stderr: string[] = []

  constructor(
    private readonly config: McpStdioServerConfig,
    private readonly workspaceRoot: string,
    onChange: () => void,
    policy: RestartPolicy = DEFAULT_RESTART
  ) {
    super({ name: config.name, command: config.command, policy }, onChange)
  }

  override get pid(): number | null {
    return this.current ? (this.transport?.pid ?? null) : null
  }

  protected async open(delayMs: number): Promise<Client> {
    if (delayMs > 0) await sleep(delayMs)
    if (this.phase === 'closed') throw this.failure()
    const { command, timeoutMs } = this.config
    const path = await loginPath()
    this.warning = path.warning
    let spawnSpec: StdioSpawnSpec
    try {
      spawnSpec = stdioSpawnSpec(this.config, this.workspaceRoot, path.path)
    } catch (error) {
      this.send({ kind: 'open-failed', error: toToolError(error) })
      throw error
    }
    const transport = stdioTransport(spawnSpec, this.config.name)
    transport.stderr?.on('data', (chunk: Buffer) => this.keepStderr(chunk.toString()))
    const client = this.newClient()
    const initializing = this.initialize(client, transport, this.config.name, timeoutMs ?? 30_000)
    // spawned synchronously by connect(): the pid is known now, and kept to end the group if initialize fails
    const pid = transport.pid
    try {
      await initializing
    } catch (error) {
      await Promise.all([client.close().catch(() => {}), endGroup(pid)])
      const stderr = [...this.stderr]
      if (error instanceof McpFailure && error.code === 'timeout') {
        this.send({ kind: 'open-failed', error: { ...error.toToolError(), stderr } })
        throw new McpFailure('timeout', error.message, { stderr })
      }
      const message = `could not start \`${command}\`: ${(error as Error).message}`
      this.send({ kind: 'crashed', at: Date.now(), message, stderr })
      throw this.failure()
    }
    client.onclose = () => this.exited(client)
    this.transport = transport
    return this.opened(client)
  }

  private keepStderr(text: string): void {
    this.stderr.push(...text.split('\n').filter((line) => line.trim() !== ''))
    if (this.stderr.length > STDERR_LINES) this.stderr.splice(0, this.stderr.length - STDERR_LINES)
  }

  /** The live process exited: the machine restarts it after a backoff, or calls it a crash loop. */
  private exited(client: Client): void {
    if (this.current !== client) return
    this.current = null
    const message = `\`${this.config.command}\` exited (pid ${this.transport?.pid ?? '?'})`
    this.send({ kind: 'crashed', at: Date.now(), message, stderr: [...this.stderr] })
  }

  override async reset(): Promise<void> {
    this.stderr = []
    await super.reset()
  }
}
