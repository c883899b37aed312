import { existsSync } from 'node:fs'
import { chmod, lstat, mkdir, readdir, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** The app data folder, the same for the Electron and the headless shell. `SYNCSCOPE_DATA_DIR` overrides it. */
export function defaultDataDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform
): string {
  if (env.SYNCSCOPE_DATA_DIR) return env.SYNCSCOPE_DATA_DIR
  if (platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'Syncscope')
  if (platform === 'win32') return join(env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'Syncscope')
  return join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'syncscope')
}

/**
 * Written once every file an older version left readable by others has been made private. Named anew when a release
 * fixes a writer (2: proxy.json was copied 0644 from the sample), so the sweep runs once more.
 */
const PRIVATE_MARKER = '.private-modes-2'

/**
 * Makes the data folder private: the folder 0700 and, once, everything in it owner-only (files an older version
 * wrote 0644). Only the folder itself and what it holds change mode, never a folder above it. The embedded
 * cluster (`postgres/`) is left to Postgres, which keeps its own files private.
 */
export async function preparePrivateDataDir(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  await chmod(dataDir, 0o700)
  const marker = join(dataDir, PRIVATE_MARKER)
  if (existsSync(marker)) return
  for (const name of await readdir(dataDir)) if (name !== 'postgres') await makePrivate(join(dataDir, name))
  await writeFile(marker, '', { mode: 0o600 })
}

async function makePrivate(path: string): Promise<void> {
  const info = await lstat(path)
  if (info.isSymbolicLink()) return
  if ((info.mode & 0o077) !== 0) await chmod(path, info.mode & 0o700)
  if (info.isDirectory()) for (const name of await readdir(path)) await makePrivate(join(path, name))
}
