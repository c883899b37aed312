import { resolve } from 'node:path'
import { currentLauncher } from '../mcp/export/launcher-command'
import { exportableServers } from '../mcp/export/host-exports'
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
  const plan = await planExport(
    host.data,
    names,
    currentLauncher(values.dataDir, values.workspaceDir, values.configFile),
    ...(values.file ? [resolve(values.file)] : [])
  )
  if (values.json)
    io.out(`${JSON.stringify({ ...plan, applied: Boolean(values.yes) && plan.diff.length > 0 }, null, 2)}\n`)
  else {
    io.out(
      plan.diff.length
        ? `--- ${plan.path}\n+++ ${plan.path} (after the export)\n${plan.diff.join('\n')}\n`
        : `${plan.path} already has these entries; nothing to change\n`
    )
  }
  for (const name of plan.conflicts)
    io.err(`${plan.path} already has a server named ${name} that is not a syncscope launcher entry: left as it is\n`)
  if (plan.diff.length === 0) return 0
  if (!values.yes) {
    io.err('nothing written: run again with --yes to write these changes\n')
    return 0
  }
  await applyExport(plan)
  io.err(`wrote ${plan.path}\n`)
  return 0
}
