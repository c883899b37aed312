import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId
} from '@modelcontextprotocol/sdk/types.js'
import type { ToolFilter } from '../../../shared/contract/mcp-tool-filter'
import { toolVerdict } from './filter'

export interface GateDecision {
  /** What goes on to the server (null: nothing). */
  forward: JSONRPCMessage | null
  /** What goes back to the host at once (null: nothing). */
  answer: JSONRPCMessage | null
}

/**
 * Between a host and a server (`syncscope mcp run`): the host sees only the tools the filter exposes in every
 * `tools/list` answer (each page, and again after `notifications/tools/list_changed`), and a `tools/call` of any other
 * tool is answered here with a JSON-RPC error, never reaching the server, whether or not the host was shown the tool.
 */
export class ToolGate {
  /** Ids of the host's tools/list requests still waiting for the server's answer. */
  private readonly listing = new Set<RequestId>()

  constructor(
    private readonly server: string,
    private readonly filter: ToolFilter
  ) {}

  fromHost(message: JSONRPCMessage): GateDecision {
    if (!isJSONRPCRequest(message)) return { forward: message, answer: null }
    if (message.method === 'tools/list') this.listing.add(message.id)
    if (message.method !== 'tools/call') return { forward: message, answer: null }
    const name = (message.params as { name?: unknown } | undefined)?.name
    const verdict = typeof name === 'string' ? toolVerdict(this.filter, name) : null
    if (verdict?.exposed) return { forward: message, answer: null }
    const why = verdict
      ? `${verdict.reason} in the syncscope tool filter of ${this.server}`
      : 'the tool name is missing'
    return {
      forward: null,
      answer: {
        jsonrpc: '2.0',
        id: message.id,
        error: { code: ErrorCode.InvalidParams, message: `Unknown tool: ${String(name)} (${why})` }
      }
    }
  }

  fromServer(message: JSONRPCMessage): JSONRPCMessage {
    if (isJSONRPCErrorResponse(message) && message.id !== undefined) this.listing.delete(message.id)
    if (!isJSONRPCResultResponse(message) || !this.listing.delete(message.id)) return message
    const tools = (message.result as { tools?: unknown }).tools
    if (!Array.isArray(tools)) return message
    const exposed = tools.filter((tool) => {
      const name = (tool as { name?: unknown } | null)?.name
      return typeof name === 'string' && toolVerdict(this.filter, name).exposed
    })
    return { ...message, result: { ...message.result, tools: exposed } }
  }
}
