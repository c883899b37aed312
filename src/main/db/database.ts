import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pg from 'pg'
import type { DatabaseStatus } from '../../shared/contract/db'
import { preparePrivateDataDir } from '../data-dir'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded'
import { loadDemoData } from './demo'

export type DatabaseTarget = 'embedded' | string

export interface Database {
  readonly url: string
  readonly pool: pg.Pool
  status(): Promise<DatabaseStatus>
  close(): Promise<void>
}

export interface OpenDatabaseOptions {
  target: DatabaseTarget
  /** App data folder; the embedded cluster lives in `<dataDir>/postgres`. */
  dataDir: string
  /** The embedded Postgres's own output. */
  onLog?: (line: string) => void
  /** Lines about keeping the embedded Postgres running (a leftover server stopped, a restart after a crash). */
  log?: (line: string) => void
}

/** Every value arrives as Postgres's own text output, never converted by the driver. */
const textTypes = { getTypeParser: () => (value: string) => value }

export function maskUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '****'
    return parsed.toString()
  } catch {
    return '<invalid url>'
  }
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const embedded = options.target === 'embedded' ? await startEmbedded(options) : null
  const url = embedded?.url ?? options.target
  const pool = new pg.Pool({ connectionString: url, max: 6, types: textTypes, application_name: 'syncscope' })
  pool.on('error', (error) => options.onLog?.(`postgres pool: ${error.message}`))
  pool.on('connect', (client) => client.on('error', () => undefined))
  try {
    await pool.query('SELECT 1')
    if (embedded) await seedOnce(pool, options.dataDir)
  } catch (error) {
    await pool.end().catch(() => undefined)
    await embedded?.stop()
    throw embedded ? error : new Error(`could not connect to ${maskUrl(url)}: ${describeConnectError(error)}`)
  }
  return {
    url,
    pool,
    status: () => readStatus(pool, url, embedded),
    async close() {
      await pool.end().catch(() => undefined)
      await embedded?.stop()
    }
  }
}

async function startEmbedded(options: OpenDatabaseOptions): Promise<EmbeddedPostgresHandle> {
  await preparePrivateDataDir(options.dataDir)
  return startEmbeddedPostgres({ dataDir: join(options.dataDir, 'postgres'), onLog: options.onLog, log: options.log })
}

/** Node reports a refused loopback connection as an AggregateError (one per address) with an empty message. */
function describeConnectError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return describeConnectError(error.errors[0])
  const message = error instanceof Error ? error.message : String(error)
  return message.split('\n')[0] || 'the connection failed'
}

/** The demo is loaded once per data folder: a person who drops the tables does not get them back. */
async function seedOnce(pool: pg.Pool, dataDir: string): Promise<void> {
  const marker = join(dataDir, 'demo-loaded')
  if (existsSync(marker)) return
  await loadDemoData(pool)
  await writeFile(marker, new Date().toISOString(), { mode: 0o600 })
}

async function readStatus(
  pool: pg.Pool,
  url: string,
  embedded: EmbeddedPostgresHandle | null
): Promise<DatabaseStatus> {
  const base = {
    kind: embedded ? 'embedded' : 'external',
    url: maskUrl(url),
    dataDir: embedded?.clusterDir ?? null
  } as const
  try {
    const { rows } = await pool.query<{ version: string; wal_level: string }>(
      "SELECT current_setting('server_version') AS version, current_setting('wal_level') AS wal_level"
    )
    const row = rows[0]
    return {
      ...base,
      state: 'connected',
      serverVersion: row?.version ?? null,
      walLevel: row?.wal_level ?? null,
      error: null
    }
  } catch (error) {
    return { ...base, state: 'error', serverVersion: null, walLevel: null, error: (error as Error).message }
  }
}
