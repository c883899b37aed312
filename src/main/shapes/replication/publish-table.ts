import type pg from 'pg'
import { quoteIdent } from '../../sql'
import { isDuplicateObject, isInsufficientPrivilege, ReplicationSetupError } from './catalog'

const WAIT_LIMIT_MS = 60_000

/**
 * Puts the table into the publication with REPLICA IDENTITY FULL. When that changed anything, waits for the
 * transactions that were already open: their earlier changes are decoded without the new settings, so they must be
 * committed (and in any snapshot taken next) before the caller relies on the stream for this table. `log` hears when
 * it waits.
 */
export async function publishTable(
  pool: pg.Pool,
  publication: string,
  schema: string,
  table: string,
  isStopped: () => boolean,
  log: (line: string) => void
): Promise<void> {
  const name = `${quoteIdent(schema)}.${quoteIdent(table)}`
  const state = await tableState(pool, publication, schema, table)
  if (!state) throw new ReplicationSetupError(`table ${name} does not exist (or is not a table)`)
  if (!state.published) await addToPublication(pool, publication, name)
  for (const relation of state.withoutFullIdentity) await setReplicaIdentityFull(pool, relation)
  if (!state.published || state.withoutFullIdentity.length > 0)
    await waitForOpenTransactions(pool, name, isStopped, log)
}

/** Whether the table is published, and which of it and its partitions (they each have their own setting) lack REPLICA IDENTITY FULL. */
async function tableState(
  pool: pg.Pool,
  publication: string,
  schema: string,
  table: string
): Promise<{ published: boolean; withoutFullIdentity: string[] } | null> {
  const { rows } = await pool.query<{
    published: boolean
    without_full_identity: Array<{ schema: string; table: string }>
  }>(
    `SELECT EXISTS (SELECT 1 FROM pg_publication_tables p WHERE p.pubname = $3 AND p.schemaname = n.nspname AND p.tablename = c.relname) AS published,
            (SELECT coalesce(json_agg(json_build_object('schema', pn.nspname, 'table', pc.relname)), '[]')
               FROM pg_class pc JOIN pg_namespace pn ON pn.oid = pc.relnamespace
              WHERE (pc.oid = c.oid OR pc.oid IN (SELECT relid FROM pg_partition_tree(c.oid))) AND pc.relreplident <> 'f') AS without_full_identity
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`,
    [schema, table, publication]
  )
  const row = rows[0]
  if (!row) return null
  return {
    published: row.published,
    withoutFullIdentity: row.without_full_identity.map(
      (relation) => `${quoteIdent(relation.schema)}.${quoteIdent(relation.table)}`
    )
  }
}

async function addToPublication(pool: pg.Pool, publication: string, name: string): Promise<void> {
  try {
    await pool.query(`ALTER PUBLICATION ${quoteIdent(publication)} ADD TABLE ${name}`)
  } catch (error) {
    if (isDuplicateObject(error)) return
    if (isInsufficientPrivilege(error)) {
      throw new ReplicationSetupError(
        `cannot add ${name} to the publication "${publication}": ${(error as Error).message}; the role must own both the table and the publication (or be a superuser)`
      )
    }
    throw error
  }
}

async function setReplicaIdentityFull(pool: pg.Pool, name: string): Promise<void> {
  try {
    await pool.query(`ALTER TABLE ${name} REPLICA IDENTITY FULL`)
  } catch (error) {
    if (isInsufficientPrivilege(error)) {
      throw new ReplicationSetupError(
        `cannot set REPLICA IDENTITY FULL on ${name}: ${(error as Error).message}; run ALTER TABLE ${name} REPLICA IDENTITY FULL as the table's owner`
      )
    }
    throw error
  }
}

/** Waits until every transaction id assigned before now has finished. */
async function waitForOpenTransactions(
  pool: pg.Pool,
  name: string,
  isStopped: () => boolean,
  log: (line: string) => void
): Promise<void> {
  const { rows } = await pool.query<{ xmax: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xmax')
  const deadline = Date.now() + WAIT_LIMIT_MS
  for (let delay = 10; ; delay = Math.min(delay * 2, 500)) {
    if (isStopped()) throw new Error('replication stopped')
    const done = await pool.query<{ done: boolean }>(
      'SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8 AS done',
      [rows[0]?.xmax]
    )
    if (done.rows[0]?.done) return
    if (delay === 10) log(`${name} joined the publication: waiting for the transactions open before it to end`)
    if (Date.now() > deadline) {
      throw new Error(
        `${name} joined the publication, but transactions opened before that are still running after ${WAIT_LIMIT_MS / 1000} s; end the long-running or idle-in-transaction sessions shown in pg_stat_activity`
      )
    }
    await new Promise((resolve) => setTimeout(resolve, delay))
  }
}
