import { join } from 'node:path'
import { pruneClusters } from '../../src/main/db/cluster-inventory'
import { SYSTEM_HOME } from '../../src/main/db/postgres-binaries'
import { isRoot } from '../../src/main/db/run-as'

/**
 * As root, every test run keeps its embedded clusters here, never in the real /var/lib/syncscope/clusters: each start
 * of an embedded Postgres prunes the clusters folder it uses, and a test must not prune the clusters of a person's
 * own Syncscope (or of another checkout's run on the same machine with an older version).
 */
export const TEST_CLUSTERS_ROOT = join(SYSTEM_HOME, 'test-clusters')

/** Points this process (and every process it starts) at the tests' clusters folder, unless one is chosen already. */
export function useTestClustersRoot(): string {
  process.env.SYNCSCOPE_CLUSTERS_DIR ||= TEST_CLUSTERS_ROOT
  return process.env.SYNCSCOPE_CLUSTERS_DIR
}

/**
 * Global setup of vitest and Playwright: the tests' clusters folder for the whole run; after it, the clusters of data
 * folders the run deleted without their cluster (a test killed half-way, a helper that forgot) are removed.
 */
export default function setup(): () => Promise<void> {
  const root = useTestClustersRoot()
  return async () => {
    if (isRoot()) await pruneClusters(root)
  }
}
