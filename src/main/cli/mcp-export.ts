import { dirname, join, resolve } from 'node:path'
import { currentLauncher } from '../mcp/export/launcher-command'
import { applyClaudePermissions, claudeSettingsPath } from '../mcp/export/claude-permissions'
import { exportableServers, planPermissions } from '../mcp/export/host-exports'
import { ExportHostSchema, EXPORT_HOSTS } from '../mcp/export/hosts'
import { applyExport, planExport } from '../mcp/export/launcher-entries'
import type { Registry } from '../mcp/registry'
import { UsageError, type Output } from './output'

export interface ExportValues {
  to?: string | undefined
  server?: string[] | undefined
  file?: string | undefined
  yes?: boolean | undefined
  json?: boolean | undefined
  configFile?: string | undefined
}

/** `syncscope mcp export`: previews the diff of the host's file; `--yes` writes it. */
export async function exportCommand(
  registry: Registry,
  values: ExportValues & { dataDir: string; workspaceDir: string },
  io: Output
): Promise<number> {
  const host = ExportHostSchema.safeParse(values.to)
  if (!host.success) throw new UsageError(`--to must be one of ${EXPORT_HOSTS.join(', ')}`)
  const unknown = (values.server ?? []).filter((name) => !registry.list().some((entry) => entry.name === name))
  if (unknown.length > 0) throw new UsageError(`no MCP server named ${unknown.join(', ')}`)
  const names = values.server?.length ? values.server : exportableServers(registry)
  const launcher = currentLauncher(values.dataDir, values.workspaceDir, values.configFile)
  const plan = await planExport(host.data, names, launcher, ...(values.file ? [resolve(values.file)] : []))
  const permissions = await planPermissions(registry, host.data, names, launcher, claudeSettings(values))
  const changes = plan.diff.length + (permissions?.diff.length ?? 0)
  if (values.json)
    io.out(`${JSON.stringify({ ...plan, permissions, applied: Boolean(values.yes) && changes > 0 }, null, 2)}\n`)
  else {
    io.out(diffText(plan.path, plan.diff, 'already has these entries'))
    if (permissions) io.out(diffText(permissions.path, permissions.diff, "already has the filters' deny rules"))
  }
  for (const name of plan.conflicts)
    io.err(`${plan.path} already has a server named ${name} that is not a syncscope launcher entry: left as it is\n`)
  for (const rule of permissions?.launcherOnly ?? [])
    io.err(`Claude Code has no rule for ${rule}: \`syncscope mcp run\` enforces it\n`)
  if (changes === 0) return 0
  if (!values.yes) {
    io.err('nothing written: run again with --yes to write these changes\n')
    return 0
  }
  await applyExport(plan)
  if (plan.diff.length) io.err(`wrote ${plan.path}\n`)
  if (permissions) {
    await applyClaudePermissions(permissions)
    if (permissions.diff.length) io.err(`wrote ${permissions.path}\n`)
  }
  return 0
}

function diffText(path: string, diff: string[], unchanged: string): string {
  return diff.length
    ? `--- ${path}\n+++ ${path} (after the export)\n${diff.join('\n')}\n`
    : `${path} ${unchanged}; nothing to change\n`
}

/** Claude Code's settings beside the file written to with --file, else at their real place. */
function claudeSettings(values: ExportValues): string {
  return values.file ? join(dirname(resolve(values.file)), '.claude', 'settings.json') : claudeSettingsPath()
}
