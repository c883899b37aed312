import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { PostgresUser } from './run-as'

/**
 * Root writing into a folder the `postgres` user owns (a cluster): a name there may be a symlink planted to make root
 * write, or chown, a file elsewhere. The content goes to a new file (O_EXCL never follows a link) renamed over the
 * name, which replaces a link instead of following it.
 */
export async function replaceFileIn(dir: string, name: string, content: string, owner?: PostgresUser): Promise<void> {
  const temporary = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`)
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW
  try {
    const handle = await open(temporary, flags, 0o600)
    try {
      await handle.writeFile(content)
      if (owner?.uid !== undefined && owner.gid !== undefined) await handle.chown(owner.uid, owner.gid)
    } finally {
      await handle.close()
    }
    await rename(temporary, join(dir, name))
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}

/** A small file's text, never through a symlink; longer than `maxBytes` is an error (a file we wrote is tiny). */
export async function readSmallFile(path: string, maxBytes = 64 * 1024): Promise<string> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  try {
    const buffer = Buffer.alloc(maxBytes + 1)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    if (bytesRead > maxBytes) throw new Error(`${path} is larger than ${maxBytes} bytes`)
    return buffer.subarray(0, bytesRead).toString('utf8')
  } finally {
    await handle.close()
  }
}
