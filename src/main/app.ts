import { randomBytes } from 'node:crypto'
import { startCore, type Core, type DatabaseBoundFactory } from './core'
import { startHeadlessServer, type HeadlessServer, type PublicRoute } from './headless/server'
import { createDispatcher, type Dispatch } from './rpc/dispatcher'
import { createHandlers } from './rpc/handlers'
import type { ServeOptions } from './cli/serve-options'

export interface RunningApp {
  core: Core
  dispatch: Dispatch
  server: HeadlessServer
  /** Lines that tell a person what is served where. */
  describe(): string[]
  close(): Promise<void>
}

export interface StartAppOptions {
  serve: ServeOptions
  /** The built renderer to serve over HTTP (headless --ui); null in the Electron shell, which uses IPC. */
  rendererDir: string | null
  log: (line: string) => void
}

/** Starts the core, every room and the HTTP server: the same for `syncscope serve` and the Electron shell. */
export async function startApp({ serve, rendererDir, log }: StartAppOptions): Promise<RunningApp> {
  const dependents: DatabaseBoundFactory[] = []
  const publicRoutes: PublicRoute[] = []
  const core = await startCore({ dataDir: serve.dataDir, database: serve.database, workspaceDir: serve.workspace, log }, dependents)
  const dispatch = createDispatcher(createHandlers(core), (name, error) => log(`call ${name} failed: ${(error as Error).stack ?? String(error)}`))
  let server: HeadlessServer
  try {
    server = await startHeadlessServer({
      host: serve.host,
      port: serve.port,
      token: randomBytes(24).toString('base64url'),
      dispatch,
      events: core.events,
      rendererDir,
      publicRoutes,
      log
    })
  } catch (error) {
    await core.close()
    throw error
  }
  return {
    core,
    dispatch,
    server,
    describe: () => [
      `Shape API     ${server.url}/v1/shape`,
      ...(server.uiUrl ? [`Syncscope UI  ${server.uiUrl}`] : [])
    ],
    async close() {
      await server.close()
      await core.close()
    }
  }
}
