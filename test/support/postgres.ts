import type { ChildProcess } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type pg from 'pg'
import { removeCluster } from '../../src/main/db/cluster'
import {
  startEmbeddedPostgres,
  type EmbeddedPostgresHandle,
  type EmbeddedPostgresOptions
} from '../../src/main/db/embedded'

export interface TestPostgres extends EmbeddedPostgresHandle {
  /** Stops the server and deletes its data folder (and any cluster a test started beside it). */
  destroy(): Promise<void>
}

/** A fresh, real PostgreSQL (wal_level=logical) in a temporary folder, on a free loopback port. */
export async function startTestPostgres(
  options: Pick<EmbeddedPostgresOptions, 'restartOnCrash'> = {}
): Promise<TestPostgres> {
  const root = await mkdtemp(join(tmpdir(), 'syncscope-pg-'))
  const handle = await startEmbeddedPostgres({ dataDir: join(root, 'pgdata'), ...options })
  return {
    ...handle,
    async destroy() {
      await handle.stop()
      // Every cluster made in this folder (also replacements a test started beside it), wherever root keeps it.
      for (const name of await readdir(root)) await removeCluster(join(root, name))
      await rm(root, { recursive: true, force: true })
    }
  }
}

/** Connections closing while Postgres stops (also after pool.end(), which does not wait for them) fail harmlessly. */
export function ignoreConnectionErrors(pool: pg.Pool): void {
  pool.on('error', () => undefined)
  pool.on('connect', (client) => client.on('error', () => undefined))
}

/** Deletes an app data folder and, as root, the embedded cluster it records outside it (in the clusters folder). */
export async function removeDataDir(dataDir: string): Promise<void> {
  await removeCluster(join(dataDir, 'postgres'))
  await rm(dataDir, { recursive: true, force: true })
}

/** Ends a `syncscope serve` a test started (SIGTERM: it stops its Postgres), SIGKILL if it does not end in 20 s. */
export async function endServe(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((done) => child.once('exit', done))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  await exited
  clearTimeout(timer)
}
