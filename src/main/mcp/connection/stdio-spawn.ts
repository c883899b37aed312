import { existsSync } from 'node:fs'
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { McpStdioServerConfig } from '../../../shared/contract/mcp-config'
import { expandWorkspaceRoot } from '../config/expand'
import { McpFailure } from '../errors'

export interface StdioSpawnSpec {
  command: string
  args: string[]
  env: Record<string, string>
  cwd?: string
}

/**
 * How a stdio server is started: `${workspaceRoot}` expanded, the SDK's safe environment (PATH: the login shell's,
 * when given) plus the entry's, and the configured cwd (which must exist), else the workspace when there is one on disk.
 */
export function stdioSpawnSpec(config: McpStdioServerConfig, workspaceRoot: string, path?: string): StdioSpawnSpec {
  const { command, args = [], env = {} } = config
  let cwd: string | undefined
  if (config.cwd) {
    cwd = expandWorkspaceRoot(config.cwd, workspaceRoot)
    if (!existsSync(cwd)) throw new McpFailure('invalid_config', `cwd ${cwd} does not exist`, { path: ['cwd'] })
  } else if (existsSync(workspaceRoot)) {
    cwd = workspaceRoot
  }
  const base = { ...getDefaultEnvironment(), ...(path ? { PATH: path } : {}) }
  return {
    command,
    args: args.map((arg) => expandWorkspaceRoot(arg, workspaceRoot)),
    env: { ...base, ...env },
    ...(cwd ? { cwd } : {})
  }
}
