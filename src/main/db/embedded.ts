import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import pg from 'pg'
import { writeAtomically } from '../fs/atomic-write'
import { findFreePort } from '../net/free-port'
import { formatBytes } from '../../shared/format-bytes'
import { LEGACY_PASSWORD, prepareCluster, SUPERUSER, writeAccessRules, type ClusterLocation } from './cluster'
import { pruneClusters } from './cluster-inventory'
import { clustersRoot } from './cluster-pairing'
import { reachableBinaries } from './postgres-binaries'
import { isRunning, startPostmaster, stopLeftovers, stopPostmaster, type Postmaster } from './postmaster'
import { firstLine, postgresUser, type PostgresUser } from './run-as'
import { scramVerifier } from './scram'

export interface EmbeddedPostgresHandle {
  /** Connection URL of the `postgres` database (with the cluster's password). */
  url: string
  port: number
  /** The folder the cluster was asked for (see EmbeddedPostgresOptions.dataDir). */
  dataDir: string
  /** The cluster's data directory: `dataDir` itself, or as root a folder under /var/lib/syncscope/clusters. */
  clusterDir: string
  /** The running postmaster's pid; null while it is being restarted. */
  pid(): number | null
  stop(): Promise<void>
}

export interface EmbeddedPostgresOptions {
  /** The cluster's folder; created and initialised when empty, reused otherwise. */
  dataDir: string
  port?: number
  /** Server settings on top of the defaults (wal_level=logical, loopback only, no Unix socket). */
  settings?: Record<string, string>
  /** Postgres's own output, line by line. */
  onLog?: (line: string) => void
  /** One line for each thing done to keep the server running: a leftover server stopped, a restart after a crash. */
  log?: (line: string) => void
  /** Start the server again when it dies (default); off for a test that decides itself when Postgres comes back. */
  restartOnCrash?: boolean
  /** As root, where clusters live (default: `SYNCSCOPE_CLUSTERS_DIR`, else /var/lib/syncscope/clusters). */
  clustersRoot?: string
}

const MAX_RESTART_DELAY_MS = 10_000

/** Postmasters this process runs: asked to shut down (fast) when the process exits without stopping them. */
const running = new Set<Postmaster>()
process.on('exit', () => {
  for (const postmaster of running) postmaster.child.kill('SIGINT')
})

/**
 * A real PostgreSQL for this data folder, kept running: a server an earlier (killed) run left behind is stopped
 * first, and when the server dies it is started again on the same port, with a growing pause between attempts.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const log = options.log ?? (() => undefined)
  const user = await postgresUser()
  // As root, clusters whose data folder is gone are removed while this one starts.
  const root = user.uid === undefined ? undefined : (options.clustersRoot ?? clustersRoot())
  const pruning = root === undefined ? Promise.resolve() : pruneAtStart(root, log)
  try {
    return await startCluster(options, user, root, log)
  } finally {
    await pruning
  }
}

async function startCluster(
  options: EmbeddedPostgresOptions,
  user: PostgresUser,
  root: string | undefined,
  log: (line: string) => void
): Promise<EmbeddedPostgresHandle> {
  const onLog = options.onLog ?? (() => undefined)
  const binaries = await reachableBinaries(user)
  const cluster = await prepareCluster(options.dataDir, binaries, user, log, root)
  const owner = await claimCluster(options.dataDir)
  const port = options.port ?? (await findFreePort())

  const launch = async (): Promise<Postmaster> => {
    await stopLeftovers(cluster.pgdata, log)
    await writeAccessRules(cluster.pgdata, user)
    const postmaster = await startPostmaster({
      binaries,
      user,
      pgdata: cluster.pgdata,
      port,
      settings: options.settings,
      onLog
    })
    running.add(postmaster)
    void postmaster.exited.then(() => running.delete(postmaster))
    return postmaster
  }

  let current: Postmaster | null = null
  try {
    current = await launch()
    await ensurePassword(port, cluster, log)
  } catch (error) {
    if (current) await stopPostmaster(current)
    await rm(owner, { force: true })
    throw error
  }

  let stopping = false
  let timer: NodeJS.Timeout | null = null
  let restarting: Promise<void> | null = null

  const restartLater = (attempt: number) => {
    const delay = Math.min(250 * 2 ** attempt, MAX_RESTART_DELAY_MS)
    timer = setTimeout(() => {
      timer = null
      restarting = (async () => {
        try {
          const next = await launch()
          if (stopping) return void (await stopPostmaster(next))
          current = next
          supervise(next)
          log(`embedded Postgres is running again (pid ${next.pid}, port ${port})`)
        } catch (error) {
          if (stopping) return
          log(
            `embedded Postgres did not restart (${firstLine(error)}); trying again in ${Math.min(delay * 2, MAX_RESTART_DELAY_MS) / 1000} s`
          )
          restartLater(attempt + 1)
        }
      })().finally(() => (restarting = null))
    }, delay)
  }

  const supervise = (postmaster: Postmaster) => {
    void postmaster.exited.then(({ code, signal }) => {
      if (stopping || current !== postmaster) return
      current = null
      const restart = options.restartOnCrash ?? true
      log(
        `embedded Postgres stopped unexpectedly (${signal ? `killed by ${signal}` : `exit code ${code}`})${restart ? '; restarting it' : ''}`
      )
      if (restart) restartLater(0)
    })
  }
  supervise(current)

  return {
    url: `postgres://${SUPERUSER}:${encodeURIComponent(cluster.password)}@127.0.0.1:${port}/postgres`,
    port,
    dataDir: options.dataDir,
    clusterDir: cluster.pgdata,
    pid: () => current?.pid ?? null,
    async stop() {
      if (stopping) return
      stopping = true
      if (timer) clearTimeout(timer)
      await restarting
      if (current) await stopPostmaster(current)
      current = null
      await rm(owner, { force: true })
    }
  }
}

async function pruneAtStart(root: string, log: (line: string) => void): Promise<void> {
  try {
    const { removed } = await pruneClusters(root)
    if (removed.length === 0) return
    const freed = removed.reduce((sum, cluster) => sum + cluster.sizeBytes, 0)
    const named = removed.slice(0, 5).map((cluster) => cluster.id)
    const more = removed.length > named.length ? ` and ${removed.length - named.length} more` : ''
    log(
      `embedded Postgres: removed ${removed.length} cluster(s) of ${root} whose data folder is gone (${formatBytes(freed)}): ${named.join(', ')}${more}`
    )
  } catch (error) {
    log(`embedded Postgres: could not remove the orphaned clusters of ${root} (${firstLine(error)})`)
  }
}

/**
 * Only one Syncscope runs a cluster: a Postgres left on it is stopped only when the process that ran it is gone
 * (killed), never while another running Syncscope uses it.
 */
async function claimCluster(dataDir: string): Promise<string> {
  const file = join(dataDir, 'syncscope-owner.pid')
  const owner = Number((await readFile(file, 'utf8').catch(() => '')).trim())
  if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && (await isRunning(owner))) {
    throw new Error(
      `another Syncscope (pid ${owner}) is using ${dataDir}: stop it first, or give this one another --data-dir`
    )
  }
  await writeAtomically(file, String(process.pid))
  return file
}

async function connect(port: number, password: string): Promise<pg.Client> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: SUPERUSER,
    password,
    database: 'postgres',
    connectionTimeoutMillis: 10_000
  })
  client.on('error', () => undefined)
  await client.connect()
  return client
}

/**
 * The cluster's own password must let us in. A cluster made before the password was chosen per cluster still has
 * the built-in one: it is replaced here (as a SCRAM verifier, so the password never reaches the server's log).
 */
async function ensurePassword(port: number, cluster: ClusterLocation, log: (line: string) => void): Promise<void> {
  try {
    await (await connect(port, cluster.password)).end()
    return
  } catch (error) {
    if ((error as { code?: string }).code !== '28P01')
      throw new Error(`could not connect to the embedded Postgres: ${firstLine(error)}`, { cause: error })
  }
  let legacy: pg.Client
  try {
    legacy = await connect(port, LEGACY_PASSWORD)
  } catch {
    throw new Error(
      `the embedded Postgres refuses the password kept in ${cluster.passwordFile}: restore that file, or move ${cluster.pgdata} away to start a new, empty cluster`
    )
  }
  try {
    await legacy.query(`ALTER ROLE ${SUPERUSER} PASSWORD '${scramVerifier(cluster.password)}'`)
  } finally {
    await legacy.end()
  }
  log('embedded Postgres: this older cluster had the built-in password; it now has its own random one')
}
