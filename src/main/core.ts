import { join } from 'node:path'
import { openDatabase, type Database, type DatabaseTarget } from './db/database'
import { createSqlConsole, type SqlConsole } from './db/sql-console'
import type { EventBus } from './events'

export interface CoreOptions {
  dataDir: string
  database: DatabaseTarget
  /** Workspace folder (its mcp.json); defaults to the current directory. */
  workspaceDir: string
  log: (line: string) => void
  events: EventBus
}

/** A service that lives on top of the current database and restarts when the app connects elsewhere. */
export interface DatabaseBoundService {
  readonly name: string
  stop(): Promise<void>
}

export type DatabaseBoundFactory = (db: Database, core: Core) => Promise<DatabaseBoundService>

export interface Core {
  readonly options: CoreOptions
  readonly events: EventBus
  database(): Database
  sqlConsole(): SqlConsole
  /** Points the app at another database (embedded or a URL) and restarts what depends on it. */
  connect(target: DatabaseTarget): Promise<void>
  close(): Promise<void>
}

/** Starts the plain-Node core both shells share: the database and every room on top of it. */
export async function startCore(options: CoreOptions, dependents: DatabaseBoundFactory[] = []): Promise<Core> {
  const { events } = options
  let current: { db: Database; sql: SqlConsole; services: DatabaseBoundService[] } | null = null

  async function open(target: DatabaseTarget) {
    const db = await openDatabase({
      target,
      dataDir: options.dataDir,
      onLog: postgresLog(options.log),
      log: options.log
    })
    const sql = await createSqlConsole(db.pool, join(options.dataDir, 'sql-history.json'))
    const services: DatabaseBoundService[] = []
    try {
      for (const start of dependents) services.push(await start(db, core))
    } catch (error) {
      await stopAll(services)
      await db.close()
      throw error
    }
    return { db, sql, services }
  }

  async function shutdown(state: NonNullable<typeof current>) {
    await stopAll(state.services)
    await state.db.close()
  }

  const core: Core = {
    options,
    events,
    database: () => required(current).db,
    sqlConsole: () => required(current).sql,
    async connect(target) {
      const next = await open(target)
      const previous = current
      current = next
      if (previous) await shutdown(previous)
      events.emit('db.changed', { reason: 'connected' })
    },
    async close() {
      if (current) await shutdown(current)
      current = null
    }
  }
  current = await open(options.database)
  return core
}

/** The embedded server is chatty: only its problems reach the log, unless SYNCSCOPE_DEBUG asks for everything. */
function postgresLog(log: (line: string) => void): (line: string) => void {
  const verbose = Boolean(process.env.SYNCSCOPE_DEBUG)
  return (line) => {
    if (verbose || /\b(ERROR|FATAL|PANIC)\b/.test(line)) log(`[postgres] ${line}`)
  }
}

function required<T>(value: T | null): T {
  if (!value) throw new Error('the database is not connected')
  return value
}

async function stopAll(services: DatabaseBoundService[]): Promise<void> {
  for (const service of [...services].reverse()) await service.stop()
}
