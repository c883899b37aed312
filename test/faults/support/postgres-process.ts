import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../../src/main/db/embedded'

/** kill -9 of a cluster's postmaster (its backends end with it); resolves once it is gone. */
export async function killPostgres(server: Pick<EmbeddedPostgresHandle, 'pid'>): Promise<void> {
  const pid = server.pid()
  if (pid === null) throw new Error('that Postgres is not running')
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
  return startEmbeddedPostgres({ dataDir: server.dataDir, port: server.port, restartOnCrash: false })
}
