import { mkdir, rename, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'

/** Writes through a temporary file and a rename, so readers never see a half-written file. */
export async function writeAtomically(file: string, content: string, mode = 0o644): Promise<void> {
  await mkdir(dirname(file), { recursive: true })
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(temporary, content, { mode })
  await rename(temporary, file)
}
