import { mkdir, open, rename, rm, stat, writeFile } from 'node:fs/promises'
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

/**
 * Like writeAtomically, and durable once it resolves: the temporary file is synced before the rename and the folder
 * after it, so a crash (or power loss) leaves the old content or the new, never a torn or empty file. The folder must
 * exist; a failed write (e.g. a full disk) leaves the old file and no temporary behind.
 */
export async function writeDurably(file: string, content: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`
  try {
    const handle = await open(temporary, 'w', 0o600)
    try {
      await handle.writeFile(content)
      await handle.datasync()
    } finally {
      await handle.close()
    }
    await rename(temporary, file)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
  await syncPath(dirname(file))
}

/** Makes a file's content, or a folder's entries (files created, renamed or removed in it), durable. */
export async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
