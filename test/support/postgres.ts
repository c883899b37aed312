import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type pg from 'pg'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/main/db/embedded'

export interface TestPostgres extends EmbeddedPostgresHandle {
  /** Stops the server and deletes its data folder. */
  destroy(): Promise<void>
}

/** A fresh, real PostgreSQL (wal_level=logical) in a temporary folder, on a free loopback port. */
export async function startTestPostgres(): Promise<TestPostgres> {
  const root = await mkdtemp(join(tmpdir(), 'syncscope-pg-'))
  const handle = await startEmbeddedPostgres({ dataDir: join(root, 'pgdata') })
  return {
    ...handle,
    async destroy() {
      await handle.stop()
      await rm(root, { recursive: true, force: true })
    }
  }
}

/** Connections closing while Postgres stops (also after pool.end(), which does not wait for them) fail harmlessly. */
export function ignoreConnectionErrors(pool: pg.Pool): void {
  pool.on('error', () => undefined)
  pool.on('connect', (client) => client.on('error', () => undefined))
}
