import { access } from 'node:fs/promises'
import type { HostExport } from '../../../shared/contract/mcp'
import type { Registry } from '../registry'
import { EXPORT_HOSTS, hostConfigPath, hostFormat, type ExportHost } from './hosts'
import { applyExport, planExport, type ExportPlan, type LauncherCommand } from './launcher-entries'

/** The servers an export writes: every valid, enabled entry of an approved file. */
export function exportableServers(registry: Registry): string[] {
  return registry
    .list()
    .filter(
      (entry) => entry.state !== 'disabled' && entry.state !== 'untrusted' && entry.error?.code !== 'invalid_config'
    )
    .map((entry) => entry.name)
}

function serversIn(plan: ExportPlan): string[] {
  if (plan.before.trim() === '') return []
  const map = (JSON.parse(plan.before) as Record<string, unknown>)[hostFormat(plan.host).mapKey]
  return map && typeof map === 'object' ? Object.keys(map) : []
}

async function describeHost(
  host: ExportHost,
  servers: string[],
  command: LauncherCommand,
  path: string
): Promise<HostExport> {
  const exists = await access(path).then(
    () => true,
    () => false
  )
  try {
    const plan = await planExport(host, servers, command, path)
    const { diff, added, updated, removed, conflicts, beforeDigest } = plan
    return {
      host,
      path,
      exists,
      servers: serversIn(plan),
      diff,
      added,
      updated,
      removed,
      conflicts,
      beforeDigest,
      error: null
    }
  } catch (error) {
    return {
      host,
      path,
      exists,
      servers: [],
      diff: [],
      added: [],
      updated: [],
      removed: [],
      conflicts: [],
      beforeDigest: '',
      error: (error as Error).message
    }
  }
}

/** Each host's file (at its real place), what it holds, and what an export would change. */
export async function describeHostExports(
  registry: Registry,
  command: LauncherCommand,
  pathOf: (host: ExportHost) => string = (host) => hostConfigPath(host)
): Promise<HostExport[]> {
  const servers = exportableServers(registry)
  return Promise.all(EXPORT_HOSTS.map((host) => describeHost(host, servers, command, pathOf(host))))
}

/** Writes the export the UI previewed; refuses when the file changed since (the digest of what was shown). */
export async function exportToHost(
  registry: Registry,
  host: ExportHost,
  beforeDigest: string,
  command: LauncherCommand,
  path = hostConfigPath(host)
): Promise<HostExport> {
  const plan = await planExport(host, exportableServers(registry), command, path)
  await applyExport({ ...plan, beforeDigest })
  return describeHost(host, exportableServers(registry), command, path)
}
