import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { MCP_RPC_LOG_KEPT, type McpRpcMessage } from '../../shared/contract/mcp'

/** As sent and as received (`message` of the log entries). */
export interface RpcExchange {
  request: unknown
  response: unknown
}

/**
 * The raw JSON-RPC messages between us and one server, both ways, as the transport carries them (newest last,
 * bounded). Every client of the server is watched from before it connects.
 */
export class RpcLog {
  private readonly messages: McpRpcMessage[] = []
  private readonly claimed = new WeakSet<McpRpcMessage>()

  constructor(
    private readonly onMessage: (message: McpRpcMessage) => void = () => {},
    private readonly limit = MCP_RPC_LOG_KEPT
  ) {}

  /** Records everything `client` exchanges from its connect on (initialize included); call before it connects. */
  watch(client: Client): void {
    const connect = client.connect.bind(client)
    client.connect = (transport, options) => {
      this.tap(transport)
      return connect(transport, options)
    }
  }

  /** Wraps send; sets the message handler that the SDK's connect chains in front of its own. */
  private tap(transport: Transport): void {
    const send = transport.send.bind(transport)
    transport.send = (message, options) => {
      this.add('sent', message)
      return send(message, options)
    }
    transport.onmessage = (message) => this.add('received', message)
  }

  private add(direction: McpRpcMessage['direction'], message: JSONRPCMessage): void {
    const entry: McpRpcMessage = { at: new Date().toISOString(), direction, message }
    this.messages.push(entry)
    if (this.messages.length > this.limit) this.messages.shift()
    this.onMessage(entry)
  }

  list(): McpRpcMessage[] {
    return [...this.messages]
  }

  /** The newest message now: exchanges after it belong to requests sent from here on. */
  mark(): McpRpcMessage | undefined {
    return this.messages.at(-1)
  }

  /**
   * The request after `mark` that `matches` (of several, as after a retry, the last one answered), with its response
   * (by JSON-RPC id); each request is claimed once.
   */
  exchange(
    mark: McpRpcMessage | undefined,
    matches: (request: { method: string; params?: unknown }) => boolean
  ): RpcExchange | null {
    const after = this.messages.slice(mark ? this.messages.indexOf(mark) + 1 : 0)
    const responseTo = (id: string | number) =>
      after.find(
        (entry) =>
          entry.direction === 'received' && hasId(entry.message) && entry.message.id === id && !isRequest(entry.message)
      )
    const candidates = after.filter(
      (entry) =>
        entry.direction === 'sent' && !this.claimed.has(entry) && isRequest(entry.message) && matches(entry.message)
    )
    const exchanges = candidates.map((entry) => ({
      entry,
      response: responseTo((entry.message as { id: string | number }).id)
    }))
    const chosen = exchanges.findLast((exchange) => exchange.response) ?? exchanges.at(-1)
    if (!chosen) return null
    this.claimed.add(chosen.entry)
    return { request: chosen.entry.message, response: chosen.response?.message ?? null }
  }
}

function isRequest(message: unknown): message is { id: string | number; method: string; params?: unknown } {
  return typeof message === 'object' && message !== null && 'method' in message && 'id' in message
}

function hasId(message: unknown): message is { id: string | number } {
  return typeof message === 'object' && message !== null && 'id' in message
}
