import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'

/** Writes through a temporary file and a rename, so readers never see a half-written file. */
export async function writeAtomically(file: string, content: string, mode = 0o644): Promise<void> {
  await mkdir(dirname(file), { recursive: true })
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(temporary, content, { mode })
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
    const handle = await open(temporary, 'w')
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
