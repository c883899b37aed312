import type { mcpToolCalls } from '../../../shared/contract/mcp-tools'
import { budgetOverview, measureServer, saveToolFilter, setToolExposed } from '../../mcp/tools/budgets'
import type { Rooms } from '../../rooms'
import type { HandlersFor } from '../dispatcher'
import { guarded } from './mcp'

/** The tool budget of the MCP page: what each tool costs as a host sends it, and which tools hosts get. */
export function mcpToolHandlers(rooms: Rooms): HandlersFor<typeof mcpToolCalls> {
  const host = rooms.mcp
  return {
    'mcp.toolBudget': ({ name, format }) => guarded(() => measureServer(host.registry, name, format)),
    'mcp.budgetOverview': async ({ format }) => budgetOverview(host.registry, format),
    'mcp.setToolExposed': ({ name, tool, exposed, format }) =>
      guarded(async () => {
        await setToolExposed(host, name, tool, exposed)
        return measureServer(host.registry, name, format)
      }),
    'mcp.setToolFilter': ({ name, filter, format }) =>
      guarded(async () => {
        await saveToolFilter(host, name, filter)
        return measureServer(host.registry, name, format)
      })
  }
}
