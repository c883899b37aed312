import type { dbCalls } from '../../../shared/contract/db'
import type { Core } from '../../core'
import { RpcError } from '../../../shared/contract/errors'
import { clusterList, pruneClusters } from '../../db/cluster-inventory'
import { clustersRoot } from '../../db/cluster-pairing'
import { isRoot } from '../../db/run-as'
import { maskUrl } from '../../db/database'
import { listTables } from '../../db/introspect'
import type { HandlersFor } from '../dispatcher'

export function dbHandlers(core: Core): HandlersFor<typeof dbCalls> {
  return {
    'db.status': () => core.database().status(),
    'db.tables': () => listTables(core.database().pool),
    'db.history': async () => core.sqlConsole().history(),
    'db.clusters': async () => clusterList((await core.database().status()).dataDir),
    'db.pruneClusters': async () => {
      if (!isRoot())
        throw new RpcError('not_root', 'only as root are clusters kept apart from their data folder: none to prune')
      return pruneClusters(clustersRoot())
    },
    'db.query': async ({ sql }) => {
      const result = await core.sqlConsole().run(sql)
      if (result.ok) core.events.emit('db.changed', { reason: 'statement' })
      return result
    },
    'db.connect': async ({ database }) => {
      try {
        await core.connect(database)
      } catch (error) {
        throw new RpcError(
          'connect_failed',
          `could not connect to ${database === 'embedded' ? 'the embedded Postgres' : maskUrl(database)}: ${(error as Error).message}`
        )
      }
      return core.database().status()
    }
  }
}
