import { homedir } from 'node:os'
import { join } from 'node:path'

/** The app data folder, the same for the Electron and the headless shell. `SYNCSCOPE_DATA_DIR` overrides it. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (env.SYNCSCOPE_DATA_DIR) return env.SYNCSCOPE_DATA_DIR
  if (platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'Syncscope')
  if (platform === 'win32') return join(env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'Syncscope')
  return join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'syncscope')
}
