import type { mcpCalls } from '../../../shared/contract/mcp'
import { RpcError } from '../../../shared/contract/errors'
import type { Core } from '../../core'
import { existingClientConfigs } from '../../mcp/config/client-configs'
import { McpFailure, toToolError } from '../../mcp/errors'
import { describeHostExports, exportToHost } from '../../mcp/export/host-exports'
import { hostConfigPath } from '../../mcp/export/hosts'
import { currentLauncher } from '../../mcp/export/launcher-command'
import type { Rooms } from '../../rooms'
import type { HandlersFor } from '../dispatcher'

/** Expected failures reach the renderer as their McpToolError code, with the config path at fault. */
export async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof McpFailure) throw new RpcError(error.code, error.message, { ...error.extra })
    throw error
  }
}

export function mcpHandlers(_core: Core, rooms: Rooms): HandlersFor<typeof mcpCalls> {
  const host = rooms.mcp
  const registry = host.registry
  const { dataDir, workspace } = rooms.context.serve
  const launcher = () => currentLauncher(dataDir, workspace)
  return {
    'mcp.list': async () => ({
      entries: registry.list(),
      sources: host.sources(),
      secretStore: host.secretStore.description,
      clientMetadata: host.clientMetadata()
    }),
    'mcp.setClientMetadataUrl': ({ url }) => guarded(() => host.setClientMetadataUrl(url)),
    'mcp.tools': ({ name }) => guarded(() => registry.tools(name)),
    'mcp.callTool': async ({ name, tool, args, timeoutMs }) => {
      const started = performance.now()
      const traced = await registry.traceCall(name, tool, args, timeoutMs ? { timeoutMs } : {})
      const durationMs = performance.now() - started
      const debug = { rpc: traced.rpc, outputErrors: traced.outputErrors, links: traced.links }
      if (traced.error) return { ok: false, durationMs, error: toToolError(traced.error), ...debug }
      const conforms = !traced.outputErrors?.length
      return { ok: !traced.result?.isError && conforms, durationMs, result: traced.result, ...debug }
    },
    'mcp.save': ({ name, entry, target, previousName }) => guarded(() => host.save(name, entry, target, previousName)),
    'mcp.remove': ({ name, target }) => guarded(async () => ({ removed: await host.remove(name, target) })),
    'mcp.reconnect': ({ name }) => guarded(() => registry.reconnect(name)),
    'mcp.login': ({ name }) => guarded(() => registry.login(name)),
    'mcp.logout': ({ name }) => guarded(() => registry.logout(name)),
    'mcp.oauthLog': async ({ name }) => registry.oauthExchanges(name),
    'mcp.rpcLog': async ({ name }) => registry.rpcMessages(name),
    'mcp.elicitations': async () => registry.elicitations.list(),
    'mcp.answerElicitation': (answer) =>
      guarded(async () => {
        await registry.elicitations.answer(answer)
        return { answered: true as const }
      }),
    'mcp.importCandidates': () => existingClientConfigs(rooms.context.serve.workspace),
    'mcp.import': ({ path }) => guarded(() => host.importFrom(path)),
    'mcp.hostExports': () => guarded(() => describeHostExports(registry, launcher())),
    'mcp.exportToHost': ({ host: target, beforeDigest, permissionsDigest }) =>
      guarded(() =>
        exportToHost(registry, target, beforeDigest, launcher(), hostConfigPath(target), { permissionsDigest })
      ),
    'mcp.workspaceReview': async () => host.workspaceReview(),
    'mcp.approveWorkspace': ({ sha256 }) => guarded(() => host.approveWorkspace(sha256)),
    'mcp.revokeWorkspace': () => guarded(() => host.revokeWorkspace()),
    'mcp.setInput': async ({ id, value }) => {
      await host.setInput(id, value)
      return { stored: true as const }
    }
  }
}
