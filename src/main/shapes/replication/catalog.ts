import type pg from 'pg'
import { quoteIdent } from '../../sql'
import { parseLsn } from './lsn'

/** Postgres is not configured, or the role not permitted, for what the consumer must do; the message says how to fix it. */
export class ReplicationSetupError extends Error {
  override readonly name = 'ReplicationSetupError'
}

const INSUFFICIENT_PRIVILEGE = '42501'
const DUPLICATE_OBJECT = '42710'

export function isInsufficientPrivilege(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === INSUFFICIENT_PRIVILEGE
}

export function isDuplicateObject(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === DUPLICATE_OBJECT
}

export async function checkWalLevel(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ wal_level: string }>('SHOW wal_level')
  const level = rows[0]?.wal_level
  if (level !== 'logical') {
    throw new ReplicationSetupError(
      `wal_level is '${level}', but following Postgres needs wal_level = logical: run ALTER SYSTEM SET wal_level = logical and restart Postgres`
    )
  }
}

export async function currentRole(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ role: string }>('SELECT current_user AS role')
  return rows[0]?.role ?? ''
}

/** Changes of a partition are published as changes of the partitioned table, which is what shapes name. */
export async function ensurePublication(pool: pg.Pool, publication: string): Promise<void> {
  const { rows } = await pool.query<{ via_root: boolean }>(
    'SELECT pubviaroot AS via_root FROM pg_publication WHERE pubname = $1',
    [publication]
  )
  const existing = rows[0]
  if (existing?.via_root === false) {
    await pool.query(`ALTER PUBLICATION ${quoteIdent(publication)} SET (publish_via_partition_root = true)`)
  }
  if (existing) return
  try {
    await pool.query(`CREATE PUBLICATION ${quoteIdent(publication)} WITH (publish_via_partition_root = true)`)
  } catch (error) {
    if (isDuplicateObject(error)) return
    if (isInsufficientPrivilege(error)) {
      const role = await currentRole(pool)
      throw new ReplicationSetupError(
        `role "${role}" may not create the publication "${publication}": grant it CREATE on the database (GRANT CREATE ON DATABASE … TO ${quoteIdent(role)}) or create the publication as its owner`
      )
    }
    throw error
  }
}

export type SlotState = { state: 'present' } | { state: 'missing' } | { state: 'unusable'; reason: string }

export async function inspectSlot(pool: pg.Pool, slot: string): Promise<SlotState> {
  // invalidation_reason exists from Postgres 17 on; to_jsonb reads it where present.
  const { rows } = await pool.query<{
    plugin: string | null
    database: string | null
    current: string
    wal_status: string | null
    invalidation: string | null
  }>(
    `SELECT plugin, database, current_database() AS current, wal_status, to_jsonb(s) ->> 'invalidation_reason' AS invalidation
       FROM pg_replication_slots s WHERE slot_name = $1`,
    [slot]
  )
  const row = rows[0]
  if (!row) return { state: 'missing' }
  if (row.plugin !== 'pgoutput' || row.database !== row.current) {
    throw new ReplicationSetupError(
      `replication slot "${slot}" exists but is not a pgoutput slot of database "${row.current}" (plugin ${row.plugin ?? 'none'}, database ${row.database ?? 'none'}): drop it or choose another slot name`
    )
  }
  if (row.wal_status === 'lost' || row.invalidation !== null) {
    return {
      state: 'unusable',
      reason: `replication slot "${slot}" was invalidated (${row.invalidation ?? 'the WAL it needed was removed'})`
    }
  }
  return { state: 'present' }
}

export async function createSlot(pool: pg.Pool, slot: string): Promise<void> {
  try {
    await pool.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [slot])
  } catch (error) {
    if (isInsufficientPrivilege(error)) throw await replicationPrivilegeError(pool)
    throw error
  }
}

export async function dropSlot(pool: pg.Pool, slot: string): Promise<void> {
  await pool.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [slot])
}

export async function replicationPrivilegeError(pool: pg.Pool): Promise<ReplicationSetupError> {
  const role = await currentRole(pool)
  return new ReplicationSetupError(
    `role "${role}" lacks the REPLICATION attribute that logical replication needs: run ALTER ROLE ${quoteIdent(role)} WITH REPLICATION as a superuser`
  )
}

export async function currentWalLsn(pool: pg.Pool): Promise<bigint> {
  const { rows } = await pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
  return parseLsn(rows[0]?.lsn ?? '')
}
