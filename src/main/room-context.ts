import type { DatabaseBoundFactory } from './core'
import type { EventBus } from './events'
import type { PublicRoute } from './headless/server'
import type { FileEncryption } from './mcp/persistence/file-store'
import type { ServeOptions } from './settings/serve-options'

/** What a room gets when the app starts, before the database is up. */
export interface RoomContext {
  serve: ServeOptions
  events: EventBus
  log: (line: string) => void
  /** Routes the HTTP server answers without the app token (e.g. `/v1/` for the shape API). */
  publicRoutes: PublicRoute[]
  /** Services (re)started on every database the app connects to, in this order. */
  dependents: DatabaseBoundFactory[]
  /** Lines printed at start-up telling a person what is served where. */
  banner: string[]
  /** Run when the app closes, in reverse order. */
  onClose: Array<() => Promise<void>>
  /** This run's access token: the UI's contract over HTTP and the app window's calls to the shape API need it. */
  appToken: string
  /** Where a client on this machine reaches the app's HTTP server (shape API, UI), once it listens; null before. */
  serverUrl: string | null
  /** How the Electron shell encrypts the MCP secrets file where no keychain answers (safeStorage); absent elsewhere. */
  secretFileEncryption?: FileEncryption
}
