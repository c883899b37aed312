import { mkdir, rename, stat, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'

/**
 * Writes through a temporary file and a rename, so readers never see a half-written file. The file keeps the mode
 * it had; a new one is private (0600) unless `mode` says otherwise.
 */
export async function writeAtomically(file: string, content: string, mode?: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
  const keep = mode ?? ((await stat(file).catch(() => null))?.mode ?? 0o600) & 0o777
  await writeFile(temporary, content, { mode: keep })
  await rename(temporary, file)
}
