import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import {
  CallToolResultSchema,
  ErrorCode,
  McpError,
  type CallToolResult,
  type Tool
} from '@modelcontextprotocol/sdk/types.js'
import type { McpToolInfo } from '../../../shared/contract/mcp'
import type { ToolFilter } from '../../../shared/contract/mcp-tool-filter'
import type { EntryBook } from '../entry'
import { McpFailure } from '../errors'
import { schemaViolations } from '../json-schema'
import { prefixedToolName, serverOfPrefixedName } from '../naming'
import type { RpcExchange, RpcLog } from '../rpc-log'
import type { Sessions } from '../session'

export const DEFAULT_TIMEOUT_MS = 30_000

/** The most resource links of one result that are read. */
const MAX_LINKS = 10
/** The most pages and tools a server's tools/list may give: a server that pages forever is refused there. */
export const MAX_TOOL_PAGES = 100
export const MAX_TOOLS = 10_000

const tooManyTools = (server: string) =>
  new McpFailure(
    'invalid_answer',
    `${server} lists more than ${MAX_TOOLS.toLocaleString('en')} tools or ${MAX_TOOL_PAGES} pages of them: refused`
  )

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

/** The tools of the registry's servers: listed, called (by name or `mcp__<server>__<tool>`), traced for debugging. */
export class ToolCalls {
  constructor(
    private readonly book: EntryBook,
    private readonly sessions: Sessions,
    private readonly rpcLog: (name: string) => RpcLog
  ) {}

  async tools(name: string): Promise<McpToolInfo[]> {
    const tools = await this.sessions.withSession(name, async (client) => {
      const listed: Tool[] = []
      let cursor: string | undefined
      for (let pages = 0; pages === 0 || cursor; pages++) {
        if (pages === MAX_TOOL_PAGES || listed.length > MAX_TOOLS) throw tooManyTools(name)
        const page = await client.listTools(cursor ? { cursor } : {})
        for (const tool of page.tools) listed.push(tool)
        cursor = page.nextCursor
      }
      if (listed.length > MAX_TOOLS) throw tooManyTools(name)
      return listed
    })
    const entry = this.book.entry(name)
    entry.tools = tools
    this.book.changed([name])
    return tools.map((tool) => toolInfo(name, tool))
  }

  /** The tools as last listed, without asking the server (null: not listed since it connected). */
  knownTools(name: string): McpToolInfo[] | null {
    return this.book.entry(name).tools?.map((tool) => toolInfo(name, tool)) ?? null
  }

  /** Which tools other hosts get through `syncscope mcp run` (none: all). */
  toolFilter(name: string): ToolFilter | undefined {
    return this.book.entry(name).config?.tools
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

  /** Calls a tool by its `mcp__<server>__<tool>` name. */
  async callPrefixed(
    prefixed: string,
    args: Record<string, unknown> = {},
    options: { timeoutMs?: number } = {}
  ): Promise<CallToolResult> {
    const server = serverOfPrefixedName(prefixed, this.book.names())
    if (!server) throw new McpFailure('unknown_server', `no server matches the tool name ${prefixed}`)
    const tools = this.book.entry(server).tools ?? (await this.tools(server), this.book.entry(server).tools ?? [])
    const tool = tools.find((candidate) => prefixedToolName(server, candidate.name) === prefixed)
    if (!tool) throw new McpFailure('tool_not_found', `${server} has no tool named ${prefixed}`)
    return this.callTool(server, tool.name, args, options)
  }

  private async invokeTool(
    name: string,
    tool: string,
    args: Record<string, unknown>,
    options: { timeoutMs?: number }
  ): Promise<CallToolResult> {
    await this.sessions.withSession(name, async (client) => client)
    const known = this.book.entry(name).tools
    if (known && !known.some((candidate) => candidate.name === tool)) {
      throw new McpFailure(
        'tool_not_found',
        `${name} has no tool '${tool}' (it has ${known.map((t) => t.name).join(', ') || 'none'})`
      )
    }
    const timeout = options.timeoutMs ?? this.book.entry(name).config?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    // client.request, not client.callTool: the SDK would throw away a result that violates the output schema, and
    // the developer needs to see that result and where it is wrong.
    try {
      return await this.sessions.withSession(name, (client) =>
        client.request({ method: 'tools/call', params: { name: tool, arguments: args } }, CallToolResultSchema, {
          timeout
        })
      )
    } catch (error) {
      if (error instanceof UnauthorizedError) throw await this.loginLost(name)
      throw callFailure(name, tool, timeout, error)
    }
  }

  /** null when the tool declares no output schema; else each violation (none when it conforms). */
  private async outputErrors(name: string, tool: string, result: CallToolResult): Promise<string[] | null> {
    const tools = this.book.entry(name).tools ?? (await this.tools(name).catch(() => null), this.book.entry(name).tools)
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
    const timeout = options.timeoutMs ?? this.book.entry(name).config?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    return Promise.all(
      uris.map(async (uri) => {
        try {
          const read = await this.sessions.withSession(name, (client) => client.readResource({ uri }, { timeout }))
          return { uri, contents: read.contents }
        } catch (error) {
          return { uri, error: (error as Error).message }
        }
      })
    )
  }

  /** The server refused our tokens and no refresh helped (revoked grant, a new authorisation server): needs a login. */
  private async loginLost(name: string): Promise<McpFailure> {
    await this.book.reconnect(name)
    const error = this.book.describe(name).error
    return new McpFailure(
      'needs_login',
      error?.code === 'needs_login' ? error.message : `${name} refused the stored tokens: log in again`
    )
  }
}

function callFailure(name: string, tool: string, timeout: number, error: unknown): McpFailure {
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
