import type { ReplicationSlot, ReplicationState } from '../../../shared/protocol/debug-shapes'
import { bytesOrDash, millis } from './server-view'

/** The replication slots' lag and retained WAL (pg_replication_slots, pg_stat_replication), warnings first. */
export function ReplicationPanel({ replication }: { replication: ReplicationState }) {
  const keep = replication.max_slot_wal_keep_size_bytes
  return (
    <section className="panel" aria-label="Replication">
      <h2>Replication</h2>
      {replication.error && <div className="error-box">{replication.error}</div>}
      <ul className="server-warnings" data-testid="slot-warnings">
        {replication.warnings.map((warning) => (
          <li
            key={`${warning.slot_name}:${warning.message}`}
            className={`server-warning ${warning.level}`}
            data-testid="slot-warning"
            data-slot={warning.slot_name}
            data-level={warning.level}
          >
            <strong>{warning.level}</strong> {warning.message}
          </li>
        ))}
      </ul>
      <dl className="facts">
        <dt>Current WAL LSN</dt>
        <dd className="mono">{replication.current_wal_lsn ?? '—'}</dd>
        <dt>max_slot_wal_keep_size</dt>
        <dd className={keep === null ? 'warn' : ''}>
          {keep === null ? 'unlimited: a slot that lags keeps WAL until the disk is full' : bytesOrDash(keep)}
        </dd>
        <dt>max_wal_size</dt>
        <dd>{bytesOrDash(replication.max_wal_size_bytes)}</dd>
        <dt>Free on the WAL disk</dt>
        <dd>
          {replication.wal_disk_free_bytes === null
            ? 'not known (Postgres runs elsewhere)'
            : bytesOrDash(replication.wal_disk_free_bytes)}
        </dd>
      </dl>
      <div className="scroll">
        <table className="grid compact" data-testid="slots">
          <thead>
            <tr>
              <th>Slot</th>
              <th>Type</th>
              <th>Consumer</th>
              <th>wal_status</th>
              <th title="pg_wal_lsn_diff(current WAL LSN, confirmed_flush_lsn)">Lag</th>
              <th title="pg_wal_lsn_diff(current WAL LSN, restart_lsn): WAL Postgres keeps for the slot">
                Retained WAL
              </th>
              <th title="WAL that may still be written before the slot passes max_slot_wal_keep_size">safe_wal_size</th>
              <th>Flush lag</th>
              <th>confirmed_flush_lsn</th>
            </tr>
          </thead>
          <tbody>
            {replication.slots.map((slot) => (
              <SlotRow key={slot.slot_name} slot={slot} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}

function SlotRow({ slot }: { slot: ReplicationSlot }) {
  const consumer = slot.walsender ? slot.walsender.state : slot.active ? 'active' : 'none'
  return (
    <tr data-testid={`slot-${slot.slot_name}`}>
      <td className="mono">
        {slot.slot_name} {slot.ours && <span className="badge ok">this server</span>}
      </td>
      <td>
        {slot.slot_type}
        {slot.plugin ? ` (${slot.plugin})` : ''}
      </td>
      <td className={consumer === 'streaming' ? '' : 'warn'} data-testid="slot-consumer">
        {consumer}
      </td>
      <td
        className={slot.wal_status === 'unreserved' || slot.wal_status === 'lost' ? 'warn' : ''}
        data-testid="slot-wal-status"
      >
        {slot.wal_status ?? '—'}
        {slot.invalidation_reason ? ` (${slot.invalidation_reason})` : ''}
      </td>
      <td data-testid="slot-lag" data-bytes={slot.lag_bytes ?? ''} title={`${slot.lag_bytes ?? '?'} bytes`}>
        {bytesOrDash(slot.lag_bytes)}
      </td>
      <td
        data-testid="slot-retained"
        data-bytes={slot.retained_wal_bytes ?? ''}
        title={`${slot.retained_wal_bytes ?? '?'} bytes`}
      >
        {bytesOrDash(slot.retained_wal_bytes)}
      </td>
      <td>{slot.safe_wal_size_bytes === null ? 'unlimited' : bytesOrDash(slot.safe_wal_size_bytes)}</td>
      <td>{millis(slot.walsender?.flush_lag_ms ?? null)}</td>
      <td className="mono">{slot.confirmed_flush_lsn ?? '—'}</td>
    </tr>
  )
}
