import { access } from 'node:fs/promises'
import type { HostExport } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'
import type { Registry } from '../registry'
import {
  applyClaudePermissions,
  claudeSettingsPath,
  planClaudePermissions,
  type PermissionsPlan
} from './claude-permissions'
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

/** Claude Code gets the exported servers' tool filters as its own permission rules too. */
export function planPermissions(
  registry: Registry,
  host: ExportHost,
  servers: string[],
  command: LauncherCommand,
  path: string
): Promise<PermissionsPlan> | null {
  if (host !== 'claude-code') return null
  const filters = servers.map((name) => ({ name, filter: registry.toolFilter(name) }))
  return planClaudePermissions(filters, command.dataDir, path)
}

const shownPermissions = (plan: PermissionsPlan | null): HostExport['permissions'] =>
  plan && {
    path: plan.path,
    diff: plan.diff,
    added: plan.added,
    removed: plan.removed,
    launcherOnly: plan.launcherOnly,
    beforeDigest: plan.beforeDigest
  }

async function describeHost(
  registry: Registry,
  host: ExportHost,
  servers: string[],
  command: LauncherCommand,
  path: string,
  permissionsPath: string
): Promise<HostExport> {
  const exists = await access(path).then(
    () => true,
    () => false
  )
  try {
    const plan = await planExport(host, servers, command, path)
    const { diff, added, updated, removed, conflicts, beforeDigest } = plan
    const permissions = await planPermissions(registry, host, servers, command, permissionsPath)
    return {
      permissions: shownPermissions(permissions),
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
  pathOf: (host: ExportHost) => string = (host) => hostConfigPath(host),
  permissionsPath = claudeSettingsPath()
): Promise<HostExport[]> {
  const servers = exportableServers(registry)
  return Promise.all(
    EXPORT_HOSTS.map((host) => describeHost(registry, host, servers, command, pathOf(host), permissionsPath))
  )
}

/** Writes the export the UI previewed; refuses when the file changed since (the digest of what was shown). */
export async function exportToHost(
  registry: Registry,
  host: ExportHost,
  beforeDigest: string,
  command: LauncherCommand,
  path = hostConfigPath(host),
  claude: { permissionsDigest?: string | undefined; permissionsPath?: string } = {}
): Promise<HostExport> {
  const { permissionsDigest, permissionsPath = claudeSettingsPath() } = claude
  const servers = exportableServers(registry)
  const plan = await planExport(host, servers, command, path)
  const permissions = await planPermissions(registry, host, servers, command, permissionsPath)
  if (permissions && permissionsDigest !== undefined && permissions.beforeDigest !== permissionsDigest)
    throw new McpFailure(
      'invalid_config',
      `${permissions.path} changed since the preview; run the export again to see the new diff`
    )
  await applyExport({ ...plan, beforeDigest })
  if (permissions) await applyClaudePermissions(permissions)
  return describeHost(registry, host, servers, command, path, permissionsPath)
}
