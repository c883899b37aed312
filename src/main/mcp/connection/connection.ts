import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { McpToolError } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'
import {
  connectionError,
  entryStateOf,
  initialConnection,
  nextConnection,
  type ConnectionEffect,
  type ConnectionEvent,
  type ConnectionSpec,
  type ConnectionState
} from './machine'

export const CLIENT_INFO = { name: 'syncscope', version: '0.1.0' }

/** A live link to one MCP server: made on demand, shared by every call, reported through `onChange`. */
export interface Connection {
  readonly state: ReturnType<typeof entryStateOf>
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

/** The failure a caller gets for an error the entry shows. */
export function failureOf({ code, message, ...extra }: McpToolError): McpFailure {
  return new McpFailure(code, message, extra)
}

/**
 * The I/O of a connection: the machine (machine.ts) decides, this acts on the effects it returns. A subclass opens
 * the link of its transport (`open`), reporting how the attempt ended as an event.
 */
export abstract class BaseConnection implements Connection {
  warning: string | null = null
  private machine: ConnectionState
  protected current: Client | null = null
  /** The attempt in flight (phase connecting). */
  private attempt: Promise<Client> | null = null
  /** The client whose `initialize` is in flight: a close aborts it rather than leave it running. */
  private opening: Client | null = null

  /** Set by the registry: capabilities and handlers (elicitation) a client needs before it connects. */
  prepare: (client: Client) => void = () => {}

  constructor(
    spec: ConnectionSpec,
    private readonly onChange: () => void
  ) {
    this.machine = initialConnection(spec)
  }

  get state(): ReturnType<typeof entryStateOf> {
    return entryStateOf(this.machine)
  }

  get error(): McpToolError | null {
    return connectionError(this.machine)
  }

  get restarts(): number {
    return this.machine.restarts
  }

  get pid(): number | null {
    return null
  }

  protected get phase(): ConnectionState['phase'] {
    return this.machine.phase
  }

  /**
   * Applies one event: the new state, then `act` on each effect the machine returned (what must hold before anyone
   * hears of the state: a client adopted, a link let go), then the listener hears of it.
   */
  protected send(
    event: ConnectionEvent,
    act: (effect: ConnectionEffect) => void = (effect) => void this.act(effect)
  ): void {
    const { state, effects } = nextConnection(this.machine, event)
    const changed = state !== this.machine
    this.machine = state
    for (const effect of effects) act(effect)
    if (changed) this.onChange()
  }

  /** Whether the grant lets a request go without a person first (tokens held); always over stdio. */
  protected loginReady(): boolean {
    return true
  }

  async client(): Promise<Client> {
    let answer: Promise<Client> | undefined
    this.send({ kind: 'use', loginReady: this.loginReady() }, (effect) => {
      if (effect.kind === 'open') answer = this.start(effect.delayMs)
      else if (effect.kind === 'join') answer = this.attempt!
      else if (effect.kind === 'hand-out') answer = Promise.resolve(this.current!)
      else if (effect.kind === 'refuse') answer = Promise.reject(failureOf(effect.error))
    })
    if (!answer) throw new Error('a use of an MCP connection was neither answered nor refused')
    return answer
  }

  /** An attempt, which every use waits for until it ends; opened after `delayMs` (a restart's backoff). */
  private start(delayMs: number): Promise<Client> {
    const attempt = this.open(delayMs).finally(() => {
      if (this.attempt === attempt) this.attempt = null
    })
    this.attempt = attempt
    attempt.catch(() => {}) // a restart nobody waits for yet
    return attempt
  }

  protected abstract open(delayMs: number): Promise<Client>

  protected newClient(): Client {
    const client = new Client(CLIENT_INFO, { capabilities: {} })
    this.prepare(client)
    return client
  }

  /** The attempt's client answered `initialize`: live from now on, unless the connection closed meanwhile. */
  protected async opened(client: Client): Promise<Client> {
    let discard = false
    this.send({ kind: 'opened' }, (effect) => {
      if (effect.kind === 'adopt') this.current = client
      if (effect.kind === 'discard') discard = true
    })
    if (!discard) return client
    await client.close().catch(() => {})
    throw this.failure()
  }

  /** The error an attempt's callers get once the machine took in how it ended. */
  protected failure(): McpFailure {
    const error = this.error
    return error ? failureOf(error) : new McpFailure('transport_error', 'the connection is closed')
  }

  async reset(): Promise<void> {
    await this.settle({ kind: 'reset' })
  }

  async close(): Promise<void> {
    await this.settle({ kind: 'close' })
  }

  /** An event whose effects are awaited (a link closed). */
  protected async settle(event: ConnectionEvent): Promise<void> {
    const pending: Array<Promise<void>> = []
    this.send(event, (effect) => pending.push(this.act(effect)))
    await Promise.all(pending)
  }

  /** The effects of a reset, a close, an exit or a dropped link. */
  private async act(effect: ConnectionEffect): Promise<void> {
    if (effect.kind === 'open') this.start(effect.delayMs)
    if (effect.kind === 'abort-open') await this.opening?.close().catch(() => {})
    if (effect.kind === 'close-link') {
      const client = this.current
      this.current = null
      await client?.close().catch(() => {})
    }
  }

  /** `initialize` within the server's timeout; a server that stays silent fails with a `timeout` naming it. */
  protected async initialize(client: Client, transport: Transport, name: string, timeoutMs: number): Promise<void> {
    this.opening = client
    // what the transport refused (a message past its cap) is why initialize failed, not the close that followed
    let refused: McpFailure | null = null
    client.onerror = (error) => {
      if (error instanceof McpFailure) refused ??= error
    }
    try {
      await client.connect(transport, { timeout: timeoutMs })
    } catch (error) {
      if (refused) throw refused
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new McpFailure('timeout', `${name} did not answer initialize within ${timeoutMs} ms`)
      }
      throw error
    } finally {
      this.opening = null
    }
  }
}
