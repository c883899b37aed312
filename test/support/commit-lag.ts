import pg from 'pg'
import { expect } from 'vitest'
import { ignoreConnectionErrors } from './postgres'

/**
 * Postgres writes a commit to the WAL (where logical replication picks it up) before the transaction leaves the list
 * of running ones; until then new snapshots do not see it. On a loaded machine that moment lasts milliseconds. These
 * helpers make it last as long as a test wants: with `synchronous_standby_names` naming a standby that never comes, a
 * commit with `synchronous_commit = on` waits after its WAL is flushed (and replicated to the shape server, which is
 * not a standby) and before it becomes visible, until its wait is cancelled.
 */

/** Every session of the database's user commits without waiting (`local`) unless it asks; done before a server starts. */
export async function prepareCommitLag(databaseUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  try {
    await admin.query('ALTER ROLE CURRENT_USER SET synchronous_commit = local')
    await admin.query("ALTER SYSTEM SET synchronous_standby_names = 'syncscope_test_standby_never_comes'")
    await admin.query('SELECT pg_reload_conf()')
  } finally {
    await admin.end()
  }
}

export interface LaggingCommit {
  /** The backend of the transaction. */
  pid: number
  /** Ends the wait: the transaction becomes visible; resolves once its COMMIT returned. */
  release(): Promise<void>
}

/** A connection of its own (the pool's sessions began with `local`). */
export async function connect(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl })
  client.on('error', () => undefined)
  await client.connect()
  return client
}

const pidOf = async (client: pg.Client): Promise<number> =>
  Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid)

/**
 * Commits `client`'s open transaction so that it is replicated but not visible: resolves once the commit waits
 * (`SyncRep`), with a release that makes it visible.
 */
export async function commitLagging(admin: pg.Pool, client: pg.Client): Promise<LaggingCommit> {
  const pid = await pidOf(client)
  await client.query('SET LOCAL synchronous_commit = on')
  const committed = client.query('COMMIT')
  committed.catch(() => undefined)
  await expect
    .poll(
      async () =>
        (await admin.query<{ wait: string }>('SELECT wait_event AS wait FROM pg_stat_activity WHERE pid = $1', [pid]))
          .rows[0]?.wait,
      { timeout: 10_000 }
    )
    .toBe('SyncRep')
  return {
    pid,
    async release() {
      await admin.query('SELECT pg_cancel_backend($1)', [pid])
      await committed
      await client.end()
    }
  }
}

/** Backends waiting for a lock on `table` (not granted), other than `except`. */
export async function lockWaiters(admin: pg.Pool, table: string, except: number[] = []): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT l.pid FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
      WHERE c.relname = $1 AND NOT l.granted AND NOT l.pid = ANY($2::int[])`,
    [table, except]
  )
  return rows.map((row) => Number(row.pid))
}

/**
 * A transaction that asks for ACCESS EXCLUSIVE on `table` while writers hold it: the lock request waits, and every
 * later lock request on the table (a move-in query's ACCESS SHARE) queues behind it. `cancel` withdraws it, which lets
 * those through while the writers still hold their locks.
 */
export async function queueExclusiveLock(
  admin: pg.Pool,
  databaseUrl: string,
  table: string
): Promise<{ pid: number; cancel(): Promise<void> }> {
  const client = await connect(databaseUrl)
  const pid = await pidOf(client)
  await client.query('BEGIN')
  const locking = client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
  locking.catch(() => undefined)
  await expect.poll(() => lockWaiters(admin, table), { timeout: 10_000 }).toContain(pid)
  return {
    pid,
    async cancel() {
      await admin.query('SELECT pg_cancel_backend($1)', [pid])
      await locking.catch(() => undefined)
      await client.query('ROLLBACK').catch(() => undefined)
      await client.end()
    }
  }
}

/** Whether a backend has gone past the statement that takes its snapshot (not waiting on a lock, not running it). */
export async function pastSnapshot(admin: pg.Pool, pid: number): Promise<boolean> {
  const { rows } = await admin.query<{ query: string; state: string; wait: string | null }>(
    'SELECT query, state, wait_event_type AS wait FROM pg_stat_activity WHERE pid = $1',
    [pid]
  )
  const row = rows[0]
  if (!row) return true
  if (row.wait === 'Lock' || /^LOCK TABLE/i.test(row.query)) return false
  return !(row.state === 'active' && row.query.includes('pg_current_snapshot'))
}

export const poolOn = (databaseUrl: string): pg.Pool => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 })
  ignoreConnectionErrors(pool)
  return pool
}
