import pg from 'pg'
import { expect } from 'vitest'
import { ignoreConnectionErrors } from './postgres'

/** Values as Postgres prints them, as the shape server sends them. */
export const TEXT_VALUES = { getTypeParser: () => (value: string) => value }

/** A pool on `url` whose values come as Postgres prints them; errors of a connection Postgres drops are ignored. */
export function textPool(url: string, max = 2): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, types: TEXT_VALUES })
  ignoreConnectionErrors(pool)
  return pool
}

/** How `expectClientsMatchPostgres` reads a client and what Postgres holds for it. */
export interface Convergence<Client, Rows> {
  /** What the client holds now, polled until it equals `expected` (a promise for a client that syncs when asked). */
  rows: (client: Client) => Rows | Promise<Rows>
  /** What Postgres holds for the client, read once, after the writes. */
  expected: (pool: pg.Pool, client: Client) => Promise<Rows>
  /** Names the client in a failure. */
  label?: (client: Client) => string
  /** What went wrong on the client's way (a 5xx, a change delivered twice, …): empty once it holds the rows. */
  anomalies?: (client: Client) => readonly unknown[]
  /** How long each client may take to catch up, in ms (20 s by default). */
  timeout?: number
}

/**
 * Clients converge on Postgres: each one ends holding exactly what Postgres holds for it, with no anomaly on the way.
 * `database` is a URL (a pool of Postgres-printed values is opened for the reads and ended after) or a pool to read with.
 */
export async function expectClientsMatchPostgres<Client, Rows>(
  database: string | pg.Pool,
  clients: readonly Client[],
  how: Convergence<Client, Rows>
): Promise<void> {
  const pool = typeof database === 'string' ? textPool(database) : database
  try {
    for (const [index, client] of clients.entries()) {
      const label = how.label?.(client) ?? `client ${index}`
      const want = await how.expected(pool, client)
      await expect
        .poll(() => how.rows(client), { timeout: how.timeout ?? 20_000, interval: 100, message: label })
        .toEqual(want)
      if (how.anomalies) expect(how.anomalies(client), label).toEqual([])
    }
  } finally {
    if (pool !== database) await pool.end()
  }
}
