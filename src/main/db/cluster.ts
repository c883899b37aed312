import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import {
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  rmdir,
  stat,
  writeFile
} from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { writeAtomically } from '../fs/atomic-write'
import {
  clustersRoot,
  pairCluster,
  readBackReference,
  readRecord,
  recordId,
  writeBackReference,
  writeRecord,
  type ClusterRecord
} from './cluster-pairing'
import { replaceFileIn } from './owned-files'
import { ensureSystemHome, SYSTEM_HOME, type PostgresBinaries } from './postgres-binaries'
import { postgresEnv } from './postmaster'
import { canReach, firstLine, type PostgresUser } from './run-as'

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

const newPassword = () => randomBytes(24).toString('base64url')
const newClusterId = () => randomBytes(8).toString('hex')

/**
 * Finds or makes the cluster of `dataDir` (the app's `postgres` folder). As a normal user that folder is the data
 * directory. As root, Postgres runs as `postgres`, who cannot enter the app's 0700 data folder: the cluster lives in
 * the clusters folder (`clusters`, else SYNCSCOPE_CLUSTERS_DIR or /var/lib/syncscope/clusters) as <id>/
 * (postgres-owned, 0700), `dataDir` records where, with the password, and the cluster names `dataDir` back
 * (cluster-pairing.ts), so one whose data folder is gone can be removed.
 */
export async function prepareCluster(
  dataDir: string,
  binaries: PostgresBinaries,
  user: PostgresUser,
  log: (line: string) => void,
  clusters?: string
): Promise<ClusterLocation> {
  if (user.uid === undefined) return prepareOwnCluster(dataDir, binaries, user)
  const root = clusters ?? clustersRoot()
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  if (existsSync(join(dataDir, 'PG_VERSION'))) await moveOutOfDataFolder(dataDir, root, user, log)
  await chmod(dataDir, 0o700)
  const record = await pairedRecord(dataDir, root)
  const passwordFile = join(dataDir, PASSWORD_FILE)
  const password = await readOrCreatePassword(passwordFile)
  if (existsSync(join(record.pgdata, 'PG_VERSION'))) await pairCluster(dataDir, record, log)
  else
    await initCluster(record.pgdata, password, binaries, user, (building) =>
      writeBackReference(building, dataDir, record.id)
    )
  return { pgdata: record.pgdata, password, passwordFile }
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

/**
 * The data folder's record, with an id: written before the cluster is made (so the data folder names it before it
 * exists), or given one when an older version wrote it without.
 */
async function pairedRecord(dataDir: string, root: string): Promise<Required<ClusterRecord>> {
  const existing = await readRecord(dataDir)
  if (existing?.id !== undefined) return { pgdata: existing.pgdata, id: existing.id }
  let record: Required<ClusterRecord>
  if (existing) record = { pgdata: existing.pgdata, id: recordId(existing) }
  else {
    const id = newClusterId()
    record = { pgdata: join(root, id), id }
  }
  await writeRecord(dataDir, record)
  return record
}

/**
 * The folder clusters live in: postgres may pass through, not list. It decides what `syncscope clusters prune`
 * deletes, so it must be root's and writable by nobody else.
 */
export async function ensureClustersFolder(root: string, user: PostgresUser): Promise<void> {
  if (root.startsWith(`${SYSTEM_HOME}/`)) await ensureSystemHome()
  await mkdir(root, { recursive: true })
  const info = await stat(root)
  if (info.uid !== 0 || (info.mode & 0o022) !== 0)
    throw new Error(
      `${root} must be owned by root and writable only by root (it is mode ${(info.mode & 0o777).toString(8)}, uid ${info.uid}): fix it with chown root ${root} && chmod 711 ${root}`
    )
  await chmod(root, 0o711)
  if (!(await canReach(root, user, 0o1)))
    throw new Error(
      `the \`postgres\` user cannot reach ${root}: make it and the folders above it enterable by others (chmod o+x)`
    )
}

/** A cluster an older version made in the data folder as root moves to the clusters folder (recorded). */
async function moveOutOfDataFolder(
  dataDir: string,
  root: string,
  user: PostgresUser,
  log: (line: string) => void
): Promise<void> {
  await ensureClustersFolder(root, user)
  const id = newClusterId()
  const pgdata = join(root, id)
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
  await writeRecord(dataDir, { pgdata, id })
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
  if (user.uid !== undefined) await ensureClustersFolder(parent, user)
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
  return (await readRecord(dataDir).catch(() => null))?.pgdata ?? dataDir
}

/**
 * Deletes the cluster of `dataDir` and its record (tests; a data folder that is being thrown away): the cluster only
 * when it names this data folder back, or (made before back-references) lives in the clusters folder.
 */
export async function removeCluster(dataDir: string): Promise<void> {
  const pgdata = await clusterDirOf(dataDir)
  if (pgdata !== dataDir) {
    const reference = await readBackReference(pgdata)
    const here = await realpath(dataDir).catch(() => dataDir)
    const ours = reference.kind === 'ok' ? reference.value.dataDir === here : dirname(pgdata) === clustersRoot()
    if (ours) await rm(pgdata, { recursive: true, force: true })
  }
  await rm(dataDir, { recursive: true, force: true })
}
