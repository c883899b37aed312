import { access } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'

export interface ClientConfig {
  client: string
  path: string
}

/** Where Claude Desktop, Claude Code, Cursor, VS Code and MCP Inspector keep their MCP servers (notes §4.2). */
export function clientConfigPaths(
  workspace: string,
  home = homedir(),
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env
): ClientConfig[] {
  const appSupport =
    platform === 'darwin'
      ? join(home, 'Library', 'Application Support')
      : platform === 'win32'
        ? (env.APPDATA ?? join(home, 'AppData', 'Roaming'))
        : (env.XDG_CONFIG_HOME ?? join(home, '.config'))
  return [
    { client: 'Claude Desktop', path: join(appSupport, 'Claude', 'claude_desktop_config.json') },
    { client: 'Claude Code (project)', path: join(workspace, '.mcp.json') },
    { client: 'Claude Code (user)', path: join(home, '.claude.json') },
    { client: 'Cursor (project)', path: join(workspace, '.cursor', 'mcp.json') },
    { client: 'Cursor (user)', path: join(home, '.cursor', 'mcp.json') },
    { client: 'VS Code (workspace)', path: join(workspace, '.vscode', 'mcp.json') },
    { client: 'VS Code (user)', path: join(appSupport, 'Code', 'User', 'mcp.json') },
    { client: 'MCP Inspector', path: join(home, '.mcp-inspector', 'mcp.json') }
  ]
}

/** The ones that exist here. */
export async function existingClientConfigs(workspace: string): Promise<ClientConfig[]> {
  const found: ClientConfig[] = []
  for (const candidate of clientConfigPaths(workspace)) {
    try {
      await access(candidate.path)
      found.push(candidate)
    } catch {
      // not installed or not configured
    }
  }
  return found
}
