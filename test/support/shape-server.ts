import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { startApp, type RunningApp } from '../../src/main/app'
import { ServeOptionsSchema, type ServeOptions } from '../../src/main/settings/serve-options'
import { ignoreConnectionErrors, removeDataDir } from './postgres'

export interface TestShapeServerOptions {
  headerBrand?: ServeOptions['headerBrand']
  secret?: string
  longPollTimeout?: number
  sseKeepAlive?: number
  /** `--sse-lifetime` (ms). */
  sseLifetime?: number
  chunkBytes?: number
  cacheMaxAge?: number
  cacheStaleAge?: number
  /** `--max-subquery-rows`. */
  maxSubqueryRows?: number
  /** An external Postgres URL; default: a fresh embedded Postgres with the demo schema. */
  database?: string
  /** Reuse a data folder (e.g. to restart the server on the same shape logs). */
  dataDir?: string
  /** `--cors-origin` values: origins besides loopback that may read the shape API from a browser. */
  corsOrigins?: string[]
  /** `--allowed-host` values: Host names besides loopback and the bound address. */
  allowedHosts?: string[]
  /** `--max-shapes`, `--max-disk` (bytes) and `--max-connections`. */
  maxShapes?: number
  maxDisk?: number
  maxConnections?: number
  /** The app's log lines (default: stderr with SYNCSCOPE_DEBUG, else nowhere). */
  log?: (line: string) => void
}

export interface TestShapeServer {
  /** http://127.0.0.1:<port>: GET/POST/DELETE `${url}/v1/shape`. */
  url: string
  /** A pool on the same database the server follows. */
  pool: pg.Pool
  databaseUrl: string
  dataDir: string
  app: RunningApp
  /** Stops the server (and its embedded Postgres); keeps the data folder. */
  stop(): Promise<void>
  /** Stops the server and deletes the data folder it created. */
  close(): Promise<void>
}

/** A real `syncscope serve` core in-process (embedded Postgres + shape API) on a free loopback port. */
export async function startTestShapeServer(options: TestShapeServerOptions = {}): Promise<TestShapeServer> {
  const ownDir = options.dataDir ? null : await mkdtemp(join(tmpdir(), 'syncscope-shapes-'))
  const dataDir = options.dataDir ?? (ownDir as string)
  const serve = ServeOptionsSchema.parse({
    port: 0,
    host: '127.0.0.1',
    database: options.database ?? 'embedded',
    dataDir,
    workspace: dataDir,
    headerBrand: options.headerBrand ?? 'service',
    secret: options.secret,
    longPollTimeout: options.longPollTimeout ?? 20_000,
    sseKeepAlive: options.sseKeepAlive ?? 21_000,
    sseLifetime: options.sseLifetime,
    chunkBytes: options.chunkBytes,
    corsOrigins: options.corsOrigins,
    allowedHosts: options.allowedHosts,
    cacheMaxAge: options.cacheMaxAge,
    cacheStaleAge: options.cacheStaleAge,
    maxSubqueryRows: options.maxSubqueryRows,
    maxShapes: options.maxShapes,
    maxDisk: options.maxDisk,
    maxConnections: options.maxConnections
  })
  const log = options.log ?? ((line: string) => process.env.SYNCSCOPE_DEBUG && process.stderr.write(`${line}\n`))
  const app = await startApp({ serve, rendererDir: null, log })
  const databaseUrl = app.core.database().url
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 })
  ignoreConnectionErrors(pool)
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await pool.end()
    await app.close()
  }
  return {
    url: app.server.url,
    pool,
    databaseUrl,
    dataDir,
    app,
    stop,
    async close() {
      await stop()
      if (ownDir) await removeDataDir(ownDir)
    }
  }
}

/**
 * Waits until `server` holds exactly `count` live long-polls of the shape `handle`: parsed and waiting for its next
 * change (so a change made now answers them as waiting requests, not as catch-ups), or gone once they left.
 */
export async function untilHeld(server: TestShapeServer, handle: string, count: number): Promise<void> {
  // imported here: the benches (run by tsx as CommonJS, not by vitest) use this module too
  const { expect, vi } = await import('vitest')
  await vi.waitFor(
    () => {
      const service = server.app.rooms.shapes.service()
      const shape = service?.shapeByHandle(handle)
      expect(shape ? service?.live.heldLongPolls(shape) : 0, `live long-polls held for ${handle}`).toBe(count)
    },
    { timeout: 20_000, interval: 5 }
  )
}
