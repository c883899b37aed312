import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { McpFailure } from '../errors'
import type { LauncherCommand } from './launcher-entries'

/** `bin/syncscope.js` of this install, found above this module (source tree or build output alike). */
export function syncscopeBin(from = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'bin', 'syncscope.js')
    if (existsSync(candidate)) return candidate
    if (dirname(dir) === dir)
      throw new McpFailure(
        'invalid_config',
        `cannot find bin/syncscope.js above ${from}: the launcher needs the syncscope command of this install`
      )
  }
}

/** The launcher as this process would start it: this node binary and this install's bin, both absolute. */
export function currentLauncher(dataDir: string, workspace: string, configFile?: string): LauncherCommand {
  return { node: process.execPath, bin: syncscopeBin(), dataDir, workspace, ...(configFile ? { configFile } : {}) }
}
