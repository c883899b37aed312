import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Who the embedded Postgres runs as: ourselves, or (as root, which Postgres refuses) the `postgres` user. */
export interface PostgresUser {
  /** Set only when we are root and switch to `postgres` for every Postgres program. */
  uid?: number
  gid?: number
}

export const isRoot = (): boolean => process.getuid?.() === 0

async function idOf(name: string): Promise<{ uid: number; gid: number } | null> {
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
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'])
  } catch (error) {
    throw new Error(`running as root, the embedded Postgres needs a \`postgres\` user and creating it failed (${firstLine(error)}): create one (useradd --system postgres) or run as a normal user`, { cause: error })
  }
  const created = await idOf('postgres')
  if (!created) throw new Error('running as root, the embedded Postgres needs a `postgres` user: create one (useradd --system postgres) or run as a normal user')
  return created
}

/** Whether `user` can run `program` from where it is (as root: whether `postgres` can reach it through every parent folder). */
export function canRun(program: string, user: PostgresUser): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(program, ['--version'], { ...user, stdio: 'ignore', cwd: '/', env: {} })
    child.once('error', () => resolve(false))
    child.once('exit', (code) => resolve(code === 0))
  })
}

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n').find((line) => line.trim() !== '')?.trim() ?? 'unknown error'
}
