import type { McpToolInfo } from '../../../shared/contract/mcp'
import type { ToolFilter } from '../../../shared/contract/mcp-tool-filter'
import type { HostFormat, ServerBudget, ToolCost } from '../../../shared/contract/mcp-tools'
import { prefixedToolName } from '../naming'
import { toolVerdict } from './filter'
import { countTokens, tokenizerInfo, type TokenCount } from './tokenizer'

/** Claude Code cuts an MCP tool's description at 2048 characters and says so (anthropics/claude-code#87650). */
export const CLAUDE_DESCRIPTION_LIMIT = 2048
const CLAUDE_CUT_MARK = '… [truncated]'

/** VS Code's tool prefix: `mcp_`, the server name lower-cased and made safe, at most 18 characters with the `_`. */
const VSCODE_PREFIX_LIMIT = 18

function vscodeToolName(server: string, tool: string): string {
  const safe = server.toLowerCase().replace(/[^a-z0-9_.-]+/g, '_')
  return `mcp_${safe.slice(0, VSCODE_PREFIX_LIMIT - 'mcp_'.length - 1)}_${tool}`
}

function claudeDescription(description: string): string {
  return description.length > CLAUDE_DESCRIPTION_LIMIT
    ? `${description.slice(0, CLAUDE_DESCRIPTION_LIMIT)}${CLAUDE_CUT_MARK}`
    : description
}

/** The tool's entry in the host's request to the model: what the model reads, before the host's own framing. */
export function hostToolDefinition(format: HostFormat, server: string, tool: McpToolInfo): Record<string, unknown> {
  if (format === 'claude') {
    return {
      name: prefixedToolName(server, tool.tool),
      ...(tool.description !== null ? { description: claudeDescription(tool.description) } : {}),
      input_schema: tool.inputSchema
    }
  }
  return {
    type: 'function',
    function: {
      name: vscodeToolName(server, tool.tool),
      ...(tool.description !== null ? { description: tool.description } : {}),
      parameters: tool.inputSchema
    }
  }
}

function toolCost(format: HostFormat, server: string, tool: McpToolInfo, filter: ToolFilter | undefined): ToolCost {
  const definition = hostToolDefinition(format, server, tool)
  const sent = (format === 'claude' ? definition : definition.function) as { name: string; description?: string }
  const serialized = JSON.stringify(definition)
  const counts: TokenCount[] = []
  const count = (text: string) => {
    const counted = countTokens(text)
    counts.push(counted)
    return counted.tokens
  }
  const tokens = count(serialized)
  const parts = {
    name: count(sent.name),
    description: count(sent.description ?? ''),
    inputSchema: count(JSON.stringify(tool.inputSchema)),
    outputSchema: tool.outputSchema ? count(JSON.stringify(tool.outputSchema)) : null
  }
  const verdict = toolVerdict(filter, tool.tool)
  return {
    name: sent.name,
    tool: tool.tool,
    exposed: verdict.exposed,
    reason: verdict.reason,
    tokens,
    exact: counts.every((counted) => counted.exact),
    parts,
    serialized
  }
}

/** What each tool of a server costs as the host sends it, and the totals: every tool, and what the filter lets through. */
export function serverBudget(
  server: string,
  tools: McpToolInfo[],
  filter: ToolFilter | undefined,
  format: HostFormat
): ServerBudget {
  const costs = tools.map((tool) => toolCost(format, server, tool, filter))
  const exposed = costs.filter((cost) => cost.exposed)
  const sum = (list: ToolCost[]) => list.reduce((total, cost) => total + cost.tokens, 0)
  return {
    server,
    format,
    tokenizer: tokenizerInfo(),
    filter: filter ?? null,
    tools: costs,
    total: { tools: costs.length, tokens: sum(costs) },
    exposed: { tools: exposed.length, tokens: sum(exposed) },
    exact: costs.every((cost) => cost.exact)
  }
}
