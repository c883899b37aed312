import { lstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

/** Every folder and file under `dir` whose mode lets anyone but the owner in. */
export function openToOthers(dir: string): string[] {
  const found: string[] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    const info = lstatSync(path)
    if (info.isSymbolicLink()) continue
    if ((info.mode & 0o077) !== 0) found.push(`${path} ${(info.mode & 0o777).toString(8)}`)
    if (info.isDirectory()) found.push(...openToOthers(path))
  }
  return found
}
