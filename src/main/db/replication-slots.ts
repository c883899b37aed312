import { statfs } from 'node:fs/promises'
import { join } from 'node:path'
import type pg from 'pg'
import { formatBytes } from '../../shared/format-bytes'
import { LOOPBACK_NAMES } from '../net/host-rule'
import type { ReplicationSlot, ReplicationState, SlotWarning } from '../../shared/protocol/debug-shapes'

/**
 * When a slot's WAL starts to hurt (docs/protocol.md, "The server's state"): past half of max_slot_wal_keep_size the
 * slot is halfway to being invalidated; past a quarter of the free disk it could fill the disk by growing four times;
 * with neither known, past 1 GiB. Our own slot lagging 256 MiB behind means the server does not keep up.
 */
export const SLOT_THRESHOLDS = {
  shareOfKeepSize: 0.5,
  shareOfFreeDisk: 0.25,
  unboundedBytes: 1024 ** 3,
  ownLagBytes: 256 * 1024 ** 2
} as const

interface SlotRow {
  slot_name: string
  slot_type: string
  plugin: string | null
  database: string | null
  active: string
  wal_status: string | null
  invalidation_reason: string | null
  safe_wal_size: string | null
  restart_lsn: string | null
  confirmed_flush_lsn: string | null
  lag_bytes: string | null
  retained_bytes: string | null
  state: string | null
  sent_lsn: string | null
  flush_lsn: string | null
  write_lag_ms: string | null
  flush_lag_ms: string | null
  replay_lag_ms: string | null
  reply_time: string | null
}

interface SettingsRow {
  current_lsn: string | null
  keep_size: string | null
  max_wal_size: string | null
  data_directory: string | null
}

// Everything as text: the caller's pool may parse types its own way. invalidation_reason exists from Postgres 17 on;
// to_jsonb reads it where present. On a standby the WAL position is the last replayed one.
const CURRENT_LSN = 'CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END'
const SLOTS_SQL = `
  SELECT s.slot_name, s.slot_type, s.plugin, s.database, s.active::text AS active, s.wal_status,
         to_jsonb(s) ->> 'invalidation_reason' AS invalidation_reason, s.safe_wal_size::text AS safe_wal_size,
         s.restart_lsn::text AS restart_lsn, s.confirmed_flush_lsn::text AS confirmed_flush_lsn,
         pg_wal_lsn_diff(w.lsn, coalesce(s.confirmed_flush_lsn, s.restart_lsn))::bigint::text AS lag_bytes,
         pg_wal_lsn_diff(w.lsn, s.restart_lsn)::bigint::text AS retained_bytes,
         r.state, r.sent_lsn::text AS sent_lsn, r.flush_lsn::text AS flush_lsn,
         (extract(epoch FROM r.write_lag) * 1000)::text AS write_lag_ms,
         (extract(epoch FROM r.flush_lag) * 1000)::text AS flush_lag_ms,
         (extract(epoch FROM r.replay_lag) * 1000)::text AS replay_lag_ms,
         to_char(r.reply_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS reply_time
    FROM pg_replication_slots s
   CROSS JOIN (SELECT ${CURRENT_LSN} AS lsn) w
    LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid
   ORDER BY s.slot_name`
// data_directory is visible to superusers and pg_read_all_settings only: pg_settings leaves it out for others.
const SETTINGS_SQL = `
  SELECT (${CURRENT_LSN})::text AS current_lsn,
         pg_size_bytes(current_setting('max_slot_wal_keep_size'))::text AS keep_size,
         pg_size_bytes(current_setting('max_wal_size'))::text AS max_wal_size,
         (SELECT setting FROM pg_settings WHERE name = 'data_directory') AS data_directory`

const integer = (text: string | null): number | null => (text === null ? null : Math.round(Number(text)))
const decimal = (text: string | null): number | null => (text === null ? null : Number(text))

function slotOf(row: SlotRow, ourSlot: string): ReplicationSlot {
  return {
    slot_name: row.slot_name,
    ours: row.slot_name === ourSlot,
    slot_type: row.slot_type === 'physical' ? 'physical' : 'logical',
    plugin: row.plugin,
    database: row.database,
    active: row.active === 'true',
    wal_status: row.wal_status,
    invalidation_reason: row.invalidation_reason,
    safe_wal_size_bytes: integer(row.safe_wal_size),
    restart_lsn: row.restart_lsn,
    confirmed_flush_lsn: row.confirmed_flush_lsn,
    lag_bytes: integer(row.lag_bytes),
    retained_wal_bytes: integer(row.retained_bytes),
    walsender:
      row.state === null
        ? null
        : {
            state: row.state,
            sent_lsn: row.sent_lsn,
            flush_lsn: row.flush_lsn,
            write_lag_ms: decimal(row.write_lag_ms),
            flush_lag_ms: decimal(row.flush_lag_ms),
            replay_lag_ms: decimal(row.replay_lag_ms),
            reply_time: row.reply_time
          }
  }
}

/** Free bytes on the disk of `dataDirectory`/pg_wal, when that folder is on this machine; null otherwise. */
async function walDiskFree(dataDirectory: string | null): Promise<number | null> {
  if (dataDirectory === null) return null
  const disk = await statfs(join(dataDirectory, 'pg_wal')).catch(() => null)
  return disk ? disk.bavail * disk.bsize : null
}

/** A connection URL whose server runs on this machine: a loopback host or a Unix socket (an empty host, a path). */
export function isLocalPostgres(url: string): boolean {
  const local = (host: string) =>
    host === '' || host.startsWith('/') || host === '::1' || LOOPBACK_NAMES.includes(host.toLowerCase())
  // `?host=` wins over the URL's host, as in libpq; `postgres://user@/db?host=/run/postgresql` is no WHATWG URL
  const query = url.indexOf('?')
  const host = query === -1 ? null : new URLSearchParams(url.slice(query + 1)).get('host')
  if (host !== null) return local(host)
  try {
    return local(decodeURIComponent(new URL(url).hostname))
  } catch {
    return false
  }
}

export interface SlotReadOptions {
  /** The slot the shape server follows Postgres through. */
  ourSlot: string
  /** Postgres runs on this machine, so the disk of its data directory can be looked at. */
  localServer: boolean
}

/**
 * The replication slots of the Postgres server behind `pool` with their lag and retained WAL (pg_replication_slots,
 * pg_stat_replication), and warnings before a slot's WAL hurts. A failure to ask is reported in `error`, not thrown.
 */
export async function readReplicationSlots(pool: pg.Pool, options: SlotReadOptions): Promise<ReplicationState> {
  const empty: ReplicationState = {
    slot_name: options.ourSlot,
    current_wal_lsn: null,
    max_slot_wal_keep_size_bytes: null,
    max_wal_size_bytes: null,
    wal_disk_free_bytes: null,
    slots: [],
    warnings: [],
    error: null
  }
  try {
    const settings = (await pool.query<SettingsRow>(SETTINGS_SQL)).rows[0]
    const slots = (await pool.query<SlotRow>(SLOTS_SQL)).rows.map((row) => slotOf(row, options.ourSlot))
    const keepSize = integer(settings?.keep_size ?? null)
    const state: ReplicationState = {
      ...empty,
      current_wal_lsn: settings?.current_lsn ?? null,
      max_slot_wal_keep_size_bytes: keepSize !== null && keepSize >= 0 ? keepSize : null,
      max_wal_size_bytes: integer(settings?.max_wal_size ?? null),
      wal_disk_free_bytes: options.localServer ? await walDiskFree(settings?.data_directory ?? null) : null,
      slots
    }
    return { ...state, warnings: slotWarnings(state) }
  } catch (error) {
    return { ...empty, error: `the replication slots could not be read: ${(error as Error).message}` }
  }
}

/** What to act on, slot by slot: WAL lost or about to be, WAL that grows toward a limit, our slot not followed. */
export function slotWarnings(state: Omit<ReplicationState, 'warnings' | 'error'>): SlotWarning[] {
  const warnings: SlotWarning[] = []
  for (const slot of state.slots) {
    const warn = (level: SlotWarning['level'], message: string) =>
      warnings.push({ slot_name: slot.slot_name, level, message })
    const lost = lossOf(slot)
    if (lost) warn('critical', lost)
    else {
      const growing = retentionWarning(slot, state)
      if (growing) warn('warning', growing)
    }
    if (slot.ours && !lost) ownSlotWarnings(slot).forEach((message) => warn('warning', message))
  }
  if (!state.slots.some((slot) => slot.ours))
    warnings.push({
      slot_name: state.slot_name,
      level: 'critical',
      message: `the replication slot ${state.slot_name} does not exist: the shape server is not following Postgres`
    })
  return warnings
}

function lossOf(slot: ReplicationSlot): string | null {
  const consequence = slot.ours ? 'every shape is refetched' : 'its consumer cannot resume'
  if (slot.wal_status === 'lost' || slot.invalidation_reason !== null)
    return `slot ${slot.slot_name} is invalidated (${slot.invalidation_reason ?? 'its WAL was removed'}): ${consequence}`
  if (slot.wal_status === 'unreserved')
    return `slot ${slot.slot_name} retains ${formatBytes(slot.retained_wal_bytes ?? 0)} of WAL, past max_slot_wal_keep_size: the next checkpoint may remove WAL it needs (then ${consequence})`
  return null
}

function retentionWarning(
  slot: ReplicationSlot,
  state: Pick<ReplicationState, 'max_slot_wal_keep_size_bytes' | 'wal_disk_free_bytes'>
): string | null {
  const retained = slot.retained_wal_bytes
  if (retained === null) return null
  const held = `slot ${slot.slot_name}${slot.active ? '' : ' (no consumer connected)'} retains ${formatBytes(retained)} of WAL`
  const keep = state.max_slot_wal_keep_size_bytes
  if (keep !== null && retained >= keep * SLOT_THRESHOLDS.shareOfKeepSize)
    return `${held}, ${Math.round((retained * 100) / keep)}% of max_slot_wal_keep_size ${formatBytes(keep)}: ${formatBytes(slot.safe_wal_size_bytes ?? 0)} more and it is invalidated`
  const free = state.wal_disk_free_bytes
  if (free !== null && retained >= free * SLOT_THRESHOLDS.shareOfFreeDisk)
    return `${held}, more than a quarter of the ${formatBytes(free)} free on Postgres's WAL disk`
  if (keep === null && free === null && retained >= SLOT_THRESHOLDS.unboundedBytes)
    return `${held} and max_slot_wal_keep_size is unlimited: it grows until the slot's consumer catches up or the disk is full`
  return null
}

function ownSlotWarnings(slot: ReplicationSlot): string[] {
  const messages: string[] = []
  if (!slot.active || slot.walsender === null)
    messages.push(`replication is not streaming: no walsender serves slot ${slot.slot_name}`)
  else if (slot.walsender.state !== 'streaming')
    messages.push(
      `replication is not streaming: the walsender of slot ${slot.slot_name} is in state ${slot.walsender.state}`
    )
  if (slot.lag_bytes !== null && slot.lag_bytes >= SLOT_THRESHOLDS.ownLagBytes)
    messages.push(
      `the shape server has not confirmed the last ${formatBytes(slot.lag_bytes)} of WAL: it does not keep up with Postgres`
    )
  return messages
}
