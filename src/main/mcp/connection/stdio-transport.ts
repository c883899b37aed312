import type { ChildProcess } from 'node:child_process'
import { PassThrough } from 'node:stream'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { lineMessages, messageTooLarge } from './message-size'
import type { StdioSpawnSpec } from './stdio-spawn'
import { endGroup, spawnInGroup } from '../process-group'

/** How long a server may take to exit by itself once its stdin ends, before its group gets SIGTERM. */
const STDIN_GRACE_MS = 1_000

export interface StdioTransport extends Transport {
  readonly pid: number | null
  readonly stderr: PassThrough | null
}

/**
 * The SDK's stdio client transport, with the server in a process group of its own: stopping it (or its leader
 * exiting) ends every process of the group, so what `npx` or `sh -c` started as a grandchild goes too.
 */
class GroupStdioTransport implements StdioTransport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  readonly stderr = new PassThrough()
  private child: ChildProcess | null = null
  private readonly buffer = new ReadBuffer()
  /** Whether the line being received is still within a message's cap (a server could send one endless line). */
  private readonly within = lineMessages()
  private leaderExited: Promise<void> = Promise.resolve()
  private closing: Promise<void> | null = null

  constructor(
    private readonly spec: StdioSpawnSpec,
    private readonly server: string
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null
  }

  start(): Promise<void> {
    if (this.child) throw new Error('the stdio transport is started already')
    return new Promise((resolve, reject) => {
      const child = spawnInGroup(this.spec.command, this.spec.args, {
        env: this.spec.env,
        ...(this.spec.cwd ? { cwd: this.spec.cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe']
      })
      this.child = child
      this.leaderExited = new Promise((done) => child.once('exit', () => done()))
      child.once('error', (error) => {
        reject(error)
        this.onerror?.(error)
      })
      child.once('spawn', () => resolve())
      // a leader that exits (a crash) takes its group along, so the pipes close and the connection sees it
      child.once('exit', () => void this.close())
      child.stdin?.on('error', (error) => this.onerror?.(error))
      child.stdout?.on('data', (chunk: Buffer) => {
        if (this.closing) return
        if (!this.within(chunk)) {
          this.onerror?.(messageTooLarge(this.server))
          return void this.close()
        }
        try {
          this.buffer.append(chunk)
          for (let message = this.buffer.readMessage(); message; message = this.buffer.readMessage())
            this.onmessage?.(message)
        } catch (error) {
          this.onerror?.(error as Error)
          void this.close()
        }
      })
      child.stdout?.on('error', (error) => this.onerror?.(error))
      child.stderr?.pipe(this.stderr)
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin
      if (!stdin || this.closing) return reject(new Error('Not connected'))
      if (stdin.write(serializeMessage(message))) resolve()
      else stdin.once('drain', resolve)
    })
  }

  /** stdin ends; a server still running after STDIN_GRACE_MS gets SIGTERM, then SIGKILL, as a whole group. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const child = this.child
      if (child?.pid) {
        try {
          child.stdin?.end()
        } catch {
          // closed already
        }
        await Promise.race([this.leaderExited, new Promise((resolve) => setTimeout(resolve, STDIN_GRACE_MS).unref())])
        await endGroup(child.pid)
      }
      this.buffer.clear()
      this.onclose?.()
    })()
    return this.closing
  }
}

/** A process group per server where there are groups (POSIX); on Windows the SDK's transport. */
export function stdioTransport(spec: StdioSpawnSpec, server: string): StdioTransport {
  if (process.platform === 'win32') return new StdioClientTransport({ ...spec, stderr: 'pipe' }) as StdioTransport
  return new GroupStdioTransport(spec, server)
}
