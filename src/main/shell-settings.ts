import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { z } from 'zod'

const absolute = (what: string) => z.string().refine(isAbsolute, `${what} must be an absolute path`)

/** The shell's keys of settings.json (the MCP room keeps its own keys in the same file). */
const ShellSettingsSchema = z.looseObject({
  /** Where the app keeps its data (embedded Postgres, shape logs, secrets) instead of the default folder. */
  dataDir: absolute('dataDir').optional(),
  /** The workspace folder (its mcp.json); an app started from a dock has `/` as its current folder. */
  workspace: absolute('workspace').optional()
})

export interface ShellFolders {
  dataDir: string
  workspace: string
}

/**
 * The data and workspace folders of the desktop app: settings.json in the default data folder may name others;
 * without it (or without those keys) the default data folder and the home folder. A damaged file is refused with
 * its path and the fix, never ignored (the app would start on another data folder than the person chose).
 */
export function shellFolders(defaultDataDir: string, home: string = homedir()): ShellFolders {
  const file = join(defaultDataDir, 'settings.json')
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { dataDir: defaultDataDir, workspace: home }
    throw new Error(`cannot read ${file}: ${(error as Error).message}`, { cause: error })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new Error(`${file} is not valid JSON: fix it or remove it`)
  }
  const parsed = ShellSettingsSchema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(
      `${file}: ${issue?.path.join('.') || 'the file'}: ${issue?.message ?? 'invalid'}: fix it or remove the key`
    )
  }
  return { dataDir: parsed.data.dataDir ?? defaultDataDir, workspace: parsed.data.workspace ?? home }
}
