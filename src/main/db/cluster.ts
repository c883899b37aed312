import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, chown, cp, lstat, mkdir, readdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { z } from 'zod'
import { writeAtomically } from '../fs/atomic-write'
import { replaceFileIn } from './owned-files'
import { ensureSystemHome, SYSTEM_HOME, type PostgresBinaries } from './postgres-binaries'
import { postgresEnv } from './postmaster'
import { firstLine, type PostgresUser } from './run-as'

/** Where a cluster's data directory is and the password of its `postgres` superuser. */
export interface ClusterLocation {
  pgdata: string
  password: string
  /** The 0600 file that keeps the password (in the app's data folder). */
  passwordFile: string
}

export const SUPERUSER = 'postgres'
/** What clusters made before Syncscope chose a password per cluster were given; replaced on their first start. */
export const LEGACY_PASSWORD = 'syncscope'

const PASSWORD_FILE = 'syncscope-password'
const RECORD_FILE = 'syncscope-cluster.json'
const CLUSTERS = join(SYSTEM_HOME, 'clusters')
const RecordSchema = z.object({ pgdata: z.string().min(1) })

const newPassword = () => randomBytes(24).toString('base64url')

/**
 * Finds or makes the cluster of `dataDir` (the app's `postgres` folder). As a normal user that folder is the data
 * directory. As root, Postgres runs as `postgres`, who cannot enter the app's 0700 data folder: the cluster lives in
 * /var/lib/syncscope/clusters/<id> (postgres-owned, 0700) and `dataDir` only records where, with the password.
 */
export async function prepareCluster(
  dataDir: string,
  binaries: PostgresBinaries,
  user: PostgresUser,
  log: (line: string) => void
): Promise<ClusterLocation> {
  if (user.uid === undefined) return prepareOwnCluster(dataDir, binaries, user)
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  if (existsSync(join(dataDir, 'PG_VERSION'))) await moveOutOfDataFolder(dataDir, user, log)
  await chmod(dataDir, 0o700)
  const pgdata = await recordedPgdata(dataDir)
  const passwordFile = join(dataDir, PASSWORD_FILE)
  const password = await readOrCreatePassword(passwordFile)
  if (!existsSync(join(pgdata, 'PG_VERSION'))) await initCluster(pgdata, password, binaries, user)
  return { pgdata, password, passwordFile }
}

async function prepareOwnCluster(
  pgdata: string,
  binaries: PostgresBinaries,
  user: PostgresUser
): Promise<ClusterLocation> {
  const passwordFile = join(pgdata, PASSWORD_FILE)
  if (existsSync(join(pgdata, 'PG_VERSION')))
    return { pgdata, password: await readOrCreatePassword(passwordFile), passwordFile }
  const password = newPassword()
  await initCluster(pgdata, password, binaries, user, (building) =>
    writeFile(join(building, PASSWORD_FILE), password, { mode: 0o600 })
  )
  return { pgdata, password, passwordFile }
}

async function readOrCreatePassword(file: string): Promise<string> {
  const existing = await readFile(file, 'utf8').catch(() => null)
  if (existing !== null && existing.trim() !== '') {
    await chmod(file, 0o600)
    return existing.trim()
  }
  const password = newPassword()
  await writeAtomically(file, password, 0o600)
  return password
}

async function recordedPgdata(dataDir: string): Promise<string> {
  const file = join(dataDir, RECORD_FILE)
  const text = await readFile(file, 'utf8').catch(() => null)
  if (text !== null) {
    const record = RecordSchema.safeParse(safeJson(text))
    if (!record.success)
      throw new Error(
        `${file} is damaged: it should name the cluster's folder as {"pgdata": "…"}; fix it or delete it to start a new cluster`
      )
    return record.data.pgdata
  }
  const pgdata = join(CLUSTERS, randomBytes(8).toString('hex'))
  await writeAtomically(file, JSON.stringify(RecordSchema.parse({ pgdata })), 0o600)
  return pgdata
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

async function ensureClustersFolder(): Promise<void> {
  await ensureSystemHome()
  await mkdir(CLUSTERS, { recursive: true })
  // postgres may pass through, not list.
  await chmod(CLUSTERS, 0o711)
}

/** A cluster an older version made in the data folder as root moves to /var/lib/syncscope/clusters (recorded). */
async function moveOutOfDataFolder(dataDir: string, user: PostgresUser, log: (line: string) => void): Promise<void> {
  await ensureClustersFolder()
  const pgdata = join(CLUSTERS, randomBytes(8).toString('hex'))
  log(`embedded Postgres: moving the cluster out of the data folder to ${pgdata}, where the postgres user can reach it`)
  try {
    await rename(dataDir, pgdata)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error
    await cp(dataDir, pgdata, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true })
    await chownTree(pgdata, user)
    await rm(dataDir, { recursive: true, force: true })
  }
  await mkdir(dataDir, { mode: 0o700 })
  await writeAtomically(join(dataDir, RECORD_FILE), JSON.stringify({ pgdata }), 0o600)
}

async function chownTree(path: string, user: PostgresUser): Promise<void> {
  if (user.uid === undefined || user.gid === undefined) return
  await chown(path, user.uid, user.gid)
  if (!(await lstat(path)).isDirectory()) return
  for (const name of await readdir(path)) await chownTree(join(path, name), user)
}

/**
 * initdb into a sibling folder, renamed into place when whole: a crash mid-way never leaves a half-made cluster that
 * looks real. The password reaches initdb through a 0600 file of the user Postgres runs as, never argv.
 */
async function initCluster(
  pgdata: string,
  password: string,
  binaries: PostgresBinaries,
  user: PostgresUser,
  addFiles?: (building: string) => Promise<void>
): Promise<void> {
  const parent = dirname(pgdata)
  if (user.uid !== undefined) await ensureClustersFolder()
  else await mkdir(parent, { recursive: true })
  const building = join(parent, `.${basename(pgdata)}.initdb-${process.pid}`)
  const pwfile = `${building}.pwfile`
  await rm(building, { recursive: true, force: true })
  try {
    await mkdir(building, { mode: 0o700 })
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 })
    if (user.uid !== undefined && user.gid !== undefined) {
      await chown(building, user.uid, user.gid)
      await chown(pwfile, user.uid, user.gid)
    }
    await runInitdb(binaries, user, building, pwfile)
    await addFiles?.(building)
    if (existsSync(pgdata))
      await rmdir(pgdata).catch(() => {
        throw new Error(`${pgdata} exists and is not a Postgres cluster: move it away and start again`)
      })
    await rename(building, pgdata)
  } finally {
    await rm(pwfile, { force: true })
    await rm(building, { recursive: true, force: true })
  }
}

function runInitdb(binaries: PostgresBinaries, user: PostgresUser, pgdata: string, pwfile: string): Promise<void> {
  const args = [
    `--pgdata=${pgdata}`,
    `--username=${SUPERUSER}`,
    `--pwfile=${pwfile}`,
    '--auth=scram-sha-256',
    '--encoding=UTF8',
    '--locale=C',
    '--locale-provider=builtin',
    '--builtin-locale=C.UTF-8',
    '--no-instructions'
  ]
  return new Promise((resolve, reject) => {
    const child = spawn(binaries.initdb, args, {
      ...user,
      cwd: dirname(pgdata),
      env: postgresEnv(),
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.once('error', (error) => reject(new Error(`could not run ${binaries.initdb}: ${firstLine(error)}`)))
    child.once('close', (code) => {
      if (code === 0) return resolve()
      const reason =
        output.split('\n').find((line) => /error|fatal/i.test(line)) ??
        output.trim().split('\n').at(-1) ??
        `exit code ${code}`
      reject(new Error(`initdb could not create the embedded Postgres cluster: ${reason.trim()}`))
    })
  })
}

/** Loopback TCP with the password (SCRAM) is the only way in: no Unix socket, no trust. Rewritten at each start. */
export async function writeAccessRules(pgdata: string, user: PostgresUser): Promise<void> {
  const rules = [
    '# Written by Syncscope at every start: loopback TCP with the password only.',
    'host all all 127.0.0.1/32 scram-sha-256',
    'host replication all 127.0.0.1/32 scram-sha-256',
    ''
  ].join('\n')
  await replaceFileIn(pgdata, 'pg_hba.conf', rules, user)
}

/** The data directory of the cluster of `dataDir`: the folder itself, or the one its record names (root). */
export async function clusterDirOf(dataDir: string): Promise<string> {
  const text = await readFile(join(dataDir, RECORD_FILE), 'utf8').catch(() => null)
  const record = text === null ? null : RecordSchema.safeParse(safeJson(text))
  return record?.success ? record.data.pgdata : dataDir
}

/** Deletes the cluster of `dataDir` and its record (tests; a data folder that is being thrown away). */
export async function removeCluster(dataDir: string): Promise<void> {
  const pgdata = await clusterDirOf(dataDir)
  if (dirname(pgdata) === CLUSTERS) await rm(pgdata, { recursive: true, force: true })
  await rm(dataDir, { recursive: true, force: true })
}
