import type { ToolFilter } from '../../../shared/contract/mcp-tool-filter'
import type { BudgetOverview, HostFormat, ServerBudget } from '../../../shared/contract/mcp-tools'
import { McpFailure } from '../errors'
import type { McpHost } from '../host'
import type { Registry } from '../registry'
import { serverBudget } from './budget'
import { normaliseFilter, withToolExposed } from './filter'
import { tokenizerInfo } from './tokenizer'

/** Lists a server's tools (connecting, or starting it, if needed) and prices each one as the host sends it. */
export async function measureServer(registry: Registry, name: string, format: HostFormat): Promise<ServerBudget> {
  const tools = await registry.tools(name)
  return serverBudget(name, tools, registry.toolFilter(name), format)
}

/** Every server's totals from the tools listed so far: nothing is started for it. */
export function budgetOverview(registry: Registry, format: HostFormat): BudgetOverview {
  return {
    tokenizer: tokenizerInfo(),
    servers: registry.list().map((entry) => {
      const filter = entry.error?.code === 'invalid_config' ? undefined : safeFilter(registry, entry.name)
      const tools = entry.state === 'connected' ? registry.knownTools(entry.name) : null
      const budget = tools ? serverBudget(entry.name, tools, filter, format) : null
      return {
        server: entry.name,
        state: entry.state,
        filter: filter ?? null,
        total: budget?.total ?? null,
        exposed: budget?.exposed ?? null,
        exact: budget?.exact ?? true
      }
    })
  }
}

function safeFilter(registry: Registry, name: string): ToolFilter | undefined {
  try {
    return registry.toolFilter(name)
  } catch {
    return undefined
  }
}

/**
 * Writes a server's `tools` filter into the file its entry comes from (null: none, every tool exposed), the rest of the
 * entry as it is; the server keeps its connection.
 */
export async function saveToolFilter(host: McpHost, name: string, filter: ToolFilter | null): Promise<void> {
  const entry = host.registry.describe(name)
  if (entry.state === 'untrusted')
    throw new McpFailure('untrusted', `${name} comes from a workspace mcp.json you have not approved: approve it first`)
  if (!entry.config || !['settings', 'workspace', 'file'].includes(entry.source))
    throw new McpFailure(
      'invalid_config',
      `${name} comes from ${entry.source === 'extra' ? "the host's own servers" : 'no file'}: there is no entry to write its filter into`
    )
  const { tools: _previous, ...rest } = entry.config
  const next = normaliseFilter(filter ?? undefined)
  await host.save(name, next ? { ...rest, tools: next } : rest, entry.source === 'workspace' ? 'workspace' : 'settings')
}

/** One tool ticked or unticked on the MCP page: the smallest change to the server's filter that does it. */
export async function setToolExposed(host: McpHost, name: string, tool: string, exposed: boolean): Promise<void> {
  let next: ToolFilter | undefined
  try {
    next = withToolExposed(host.registry.toolFilter(name), tool, exposed)
  } catch (error) {
    throw new McpFailure('invalid_config', (error as Error).message)
  }
  await saveToolFilter(host, name, next ?? null)
}
