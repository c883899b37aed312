import { execFile } from 'node:child_process'
import { readFile, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Who the embedded Postgres runs as: ourselves, or (as root, which Postgres refuses) the `postgres` user. */
export interface PostgresUser {
  /** Set only when we are root and switch to `postgres` for every Postgres program. */
  uid?: number
  gid?: number
}

export const isRoot = (): boolean => process.getuid?.() === 0

/** From /etc/passwd (no process to spawn), else from `id` (users from LDAP and the like). */
async function idOf(name: string): Promise<{ uid: number; gid: number } | null> {
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '')
  const fields = passwd
    .split('\n')
    .find((line) => line.startsWith(`${name}:`))
    ?.split(':')
  if (fields && fields.length >= 4) return { uid: Number(fields[2]), gid: Number(fields[3]) }
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])])
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
  } catch {
    return null
  }
}

/** As root: the `postgres` user, created (as a system user without a home) when the machine has none. */
export async function postgresUser(): Promise<PostgresUser> {
  if (!isRoot()) return {}
  const existing = await idOf('postgres')
  if (existing) return existing
  try {
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined)
    await run('useradd', [
      '--system',
      '--gid',
      'postgres',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      'postgres'
    ])
  } catch (error) {
    throw new Error(
      `running as root, the embedded Postgres needs a \`postgres\` user and creating it failed (${firstLine(error)}): create one (useradd --system postgres) or run as a normal user`,
      { cause: error }
    )
  }
  const created = await idOf('postgres')
  if (!created)
    throw new Error(
      'running as root, the embedded Postgres needs a `postgres` user: create one (useradd --system postgres) or run as a normal user'
    )
  return created
}

/**
 * Whether `user` may enter every folder on the way to `path` and read and run it (or only enter it, `bits` 0o1), by
 * the mode bits (owner, primary group, others). Conservative: where only ACLs or supplementary groups would let it in,
 * the answer is no.
 */
export async function canReach(path: string, user: PostgresUser, bits = 0o5): Promise<boolean> {
  if (user.uid === undefined) return true
  const allowed = async (target: string, wanted: number) => {
    const info = await stat(target).catch(() => null)
    if (!info) return false
    const shift = info.uid === user.uid ? 6 : info.gid === user.gid ? 3 : 0
    return ((info.mode >> shift) & wanted) === wanted
  }
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (!(await allowed(dir, 0o1))) return false
    if (dir === dirname(dir)) break
  }
  return allowed(path, bits)
}

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return (
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? 'unknown error'
  )
}
