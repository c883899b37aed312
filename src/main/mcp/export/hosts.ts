import { homedir } from 'node:os'
import { z } from 'zod'
import { clientConfigPaths } from '../config/client-configs'

export const ExportHostSchema = z.enum(['claude-desktop', 'claude-code', 'vscode', 'cursor'])
export type ExportHost = z.infer<typeof ExportHostSchema>

export interface HostFormat {
  /** The label client-configs.ts gives the host's user-level file. */
  client: string
  /** The map the host reads its servers from. */
  mapKey: 'mcpServers' | 'servers'
  /** VS Code and Claude Code want `type: "stdio"` on a stdio entry. */
  typed: boolean
}

const FORMATS: Record<ExportHost, HostFormat> = {
  'claude-desktop': { client: 'Claude Desktop', mapKey: 'mcpServers', typed: false },
  'claude-code': { client: 'Claude Code (user)', mapKey: 'mcpServers', typed: true },
  vscode: { client: 'VS Code (user)', mapKey: 'servers', typed: true },
  cursor: { client: 'Cursor (user)', mapKey: 'mcpServers', typed: false }
}

export const EXPORT_HOSTS = ExportHostSchema.options

export function hostFormat(host: ExportHost): HostFormat {
  return FORMATS[host]
}

/** The host's user-level config file at its real place on this OS. */
export function hostConfigPath(
  host: ExportHost,
  home = homedir(),
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env
): string {
  const { client } = FORMATS[host]
  const found = clientConfigPaths('', home, platform, env).find((candidate) => candidate.client === client)
  if (!found) throw new Error(`no config location known for ${host}`)
  return found.path
}
