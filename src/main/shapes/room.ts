import { createHash } from 'node:crypto'
import { join } from 'node:path'
import type { Database } from '../db/database'
import { corsOriginRule } from '../net/guard'
import type { RoomContext } from '../room-context'
import { createShapeApi } from './http/shape-api'
import { ReplicationSetupError } from './replication'
import { ShapeService } from './service'
import { serverState } from './server-state'
import type { ServerState, ShapeQuery } from '../../shared/protocol/debug-shapes'

export interface ShapesRoom {
  /** The engine of the connected database; null while it starts, after it stopped, or when it cannot run. */
  service(): ShapeService | null
  /** The server's state (what `GET /v1/debug/shapes` answers); why there is none while the engine does not run. */
  state(query: ShapeQuery): Promise<ServerState | { unavailable: string }>
  /** Drops a shape by handle, as `DELETE /v1/shape?handle=` does; false when no active shape has that handle. */
  dropShape(handle: string): Promise<boolean | { unavailable: string }>
  /** Drops every shape; how many were dropped. */
  dropAllShapes(): Promise<number | { unavailable: string }>
}

/** Shape logs of the embedded database live in `shapes/embedded`, those of an external one under a hash of its URL. */
function databaseFolder(dataDir: string, db: Database, embedded: boolean): string {
  const name = embedded ? 'embedded' : `external-${createHash('sha256').update(db.url).digest('hex').slice(0, 16)}`
  return join(dataDir, 'shapes', name)
}

/** The shape server: `/v1/` on the app's HTTP server, its engine restarted on every database the app connects to. */
export function startShapesRoom(context: RoomContext): ShapesRoom {
  const { serve, log } = context
  let service: ShapeService | null = null
  /** Why the connected database cannot be followed (wal_level, privileges): the rest of the app still works. */
  let unavailable: string | null = null
  const api = createShapeApi({
    brand: serve.headerBrand,
    secret: serve.secret,
    hosts: { bindHost: serve.host, allowedHosts: serve.allowedHosts },
    originAllowed: corsOriginRule(serve.corsOrigins),
    appToken: context.appToken,
    live: { longPollTimeout: serve.longPollTimeout, sseKeepAlive: serve.sseKeepAlive, sseLifetime: serve.sseLifetime },
    cache: { maxAge: serve.cacheMaxAge, staleAge: serve.cacheStaleAge },
    service: () => service,
    unavailable: () => unavailable,
    serverName: 'Syncscope/0.1.0',
    log
  })
  context.publicRoutes.push({ prefix: '/v1/', handle: api })
  context.dependents.push(async (db) => {
    const embedded = (await db.status()).kind === 'embedded'
    unavailable = null
    let started: ShapeService
    try {
      started = await ShapeService.start({
        databaseUrl: db.url,
        dir: databaseFolder(serve.dataDir, db, embedded),
        chunkBytes: serve.chunkBytes,
        maxSubqueryRows: serve.maxSubqueryRows,
        limits: { maxShapes: serve.maxShapes, maxDiskBytes: serve.maxDisk ?? null },
        log
      })
    } catch (error) {
      if (!(error instanceof ReplicationSetupError)) throw error
      unavailable = `The shape server cannot follow this database: ${error.message}`
      log(unavailable)
      return { name: 'shapes', stop: async () => undefined }
    }
    service = started
    return {
      name: 'shapes',
      async stop() {
        if (service === started) service = null
        await started.stop()
      }
    }
  })
  const withService = async <T>(use: (running: ShapeService) => Promise<T>): Promise<T | { unavailable: string }> =>
    service ? use(service) : { unavailable: unavailable ?? 'The shape server is starting, please retry' }
  return {
    service: () => service,
    state: (query) => withService((running) => serverState(running, query)),
    dropShape: (handle) =>
      withService(async (running) => {
        const shape = running.shapeByHandle(handle)
        if (shape) await running.drop(shape)
        return shape !== undefined
      }),
    dropAllShapes: () => withService((running) => running.dropAll())
  }
}
