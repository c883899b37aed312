import { join } from 'node:path'
import type { ServeOptions } from '../../settings/serve-options'
import type { Core } from '../../core'
import type { Rooms } from '../../rooms'
import { RpcError } from '../../../shared/contract/errors'
import type { LocalShapeServer, shapesWorkbenchCalls } from '../../../shared/contract/shapes-workbench'
import { listTables } from '../../db/introspect'
import { AdmittedByError, admittedBy } from '../../workbench/admitted-by'
import { SavedShapesFileError, SavedShapesStore } from '../../workbench/saved-shapes'
import { randomWrites } from '../../workbench/write-generator'
import type { HandlersFor } from '../dispatcher'

/** The app's shape endpoint as a client on this machine reaches it. */
function localShapeServer(serve: ServeOptions, serverUrl: string | null): LocalShapeServer {
  return {
    url: serverUrl,
    headerBrand: serve.headerBrand,
    secretRequired: serve.secret !== undefined,
    longPollTimeoutMs: serve.longPollTimeout,
    sseKeepAliveMs: serve.sseKeepAlive
  }
}

async function readable<T>(task: () => Promise<T>): Promise<T> {
  try {
    return await task()
  } catch (error) {
    if (error instanceof SavedShapesFileError) throw new RpcError('saved_shapes_unreadable', error.message)
    throw error
  }
}

export function shapesWorkbenchHandlers(core: Core, rooms: Rooms): HandlersFor<typeof shapesWorkbenchCalls> {
  const store = new SavedShapesStore(join(core.options.dataDir, 'saved-shapes.json'))
  return {
    'shapesWorkbench.localServer': async () => localShapeServer(rooms.context.serve, rooms.context.serverUrl),
    'shapesWorkbench.saved': () => readable(() => store.list()),
    'shapesWorkbench.save': (input) => readable(() => store.save(input)),
    'shapesWorkbench.delete': async ({ id }) => ({ deleted: await readable(() => store.remove(id)) }),
    'shapesWorkbench.randomWrites': async ({ schema, table, count, kinds }) => {
      const { pool } = core.database()
      const info = (await listTables(pool)).find((candidate) => candidate.schema === schema && candidate.name === table)
      if (!info) throw new RpcError('unknown_table', `there is no table ${schema}.${table}`)
      return randomWrites(pool, info, count, kinds)
    },
    'shapesWorkbench.admittedBy': async (input) => {
      try {
        return { subqueries: await admittedBy(core.database().pool, input) }
      } catch (error) {
        if (error instanceof AdmittedByError) throw new RpcError('admitted_by_failed', error.message)
        throw error
      }
    }
  }
}
