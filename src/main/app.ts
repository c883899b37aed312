import { randomBytes } from 'node:crypto'
import type { ServeOptions } from './cli/serve-options'
import { startCore, type Core } from './core'
import { EventBus } from './events'
import type { FileEncryption } from './mcp/persistence/file-store'
import { startHeadlessServer, type HeadlessServer } from './headless/server'
import { startRooms, type RoomContext, type Rooms } from './rooms'
import { createDispatcher, type Dispatch } from './rpc/dispatcher'
import { createHandlers } from './rpc/handlers'

export interface RunningApp {
  core: Core
  rooms: Rooms
  dispatch: Dispatch
  server: HeadlessServer
  /** This run's access token (see RoomContext.appToken). */
  appToken: string
  /** Lines that tell a person what is served where. */
  describe(): string[]
  close(): Promise<void>
}

export interface StartAppOptions {
  serve: ServeOptions
  /** The built renderer to serve over HTTP (headless --ui); null in the Electron shell, which uses IPC. */
  rendererDir: string | null
  log: (line: string) => void
  /** The Electron shell's safeStorage for the MCP secrets file where no keychain answers. */
  secretFileEncryption?: FileEncryption
}

/** The server's URL as a client on this machine dials it: a wildcard address means loopback. */
function reachableUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`
}

async function closeAll(context: RoomContext): Promise<void> {
  for (const close of [...context.onClose].reverse()) await close()
}

/** Starts every room, the core and the HTTP server: the same for `syncscope serve` and the Electron shell. */
export async function startApp({
  serve,
  rendererDir,
  log,
  secretFileEncryption
}: StartAppOptions): Promise<RunningApp> {
  // Everything the app writes (shape logs, settings, history, secrets) is for this user only.
  process.umask(0o077)
  const events = new EventBus()
  const appToken = randomBytes(24).toString('base64url')
  const context: RoomContext = {
    serve,
    events,
    log,
    appToken,
    publicRoutes: [],
    dependents: [],
    banner: [],
    onClose: [],
    serverUrl: null,
    ...(secretFileEncryption ? { secretFileEncryption } : {})
  }
  let core: Core | null = null
  let server: HeadlessServer
  let rooms: Rooms
  try {
    rooms = await startRooms(context)
    core = await startCore(
      { dataDir: serve.dataDir, database: serve.database, workspaceDir: serve.workspace, log, events },
      context.dependents
    )
    const handlers = createHandlers(core, rooms)
    const dispatch = createDispatcher(handlers, (name, error) =>
      log(`call ${name} failed: ${(error as Error).stack ?? String(error)}`)
    )
    server = await startHeadlessServer({
      host: serve.host,
      allowedHosts: serve.allowedHosts,
      port: serve.port,
      token: appToken,
      dispatch,
      events,
      rendererDir,
      publicRoutes: context.publicRoutes,
      maxConnections: serve.maxConnections,
      log
    })
    context.serverUrl = reachableUrl(serve.host, server.port)
    const running = core
    return {
      core: running,
      rooms,
      dispatch,
      server,
      appToken,
      describe: () => [
        `Shape API     ${server.url}/v1/shape`,
        ...context.banner,
        ...(server.uiUrl ? [`Syncscope UI  ${server.uiUrl}`] : [])
      ],
      async close() {
        await server.close()
        await running.close()
        await closeAll(context)
      }
    }
  } catch (error) {
    await core?.close()
    await closeAll(context)
    throw error
  }
}
