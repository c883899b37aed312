import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../../src/main/db/embedded'

/** kill -9 of a cluster's postmaster (its backends end with it); resolves once it is gone. */
export async function killPostgres(dataDir: string): Promise<void> {
  const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  process.kill(pid, 'SIGKILL')
  for (;;) {
    try {
      process.kill(pid, 0)
    } catch {
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Starts the cluster of a killed postmaster again on its folder and port (Postgres recovers from its WAL). */
export function startAgain(server: Pick<EmbeddedPostgresHandle, 'dataDir' | 'port'>): Promise<EmbeddedPostgresHandle> {
  return startEmbeddedPostgres({ dataDir: server.dataDir, port: server.port })
}
