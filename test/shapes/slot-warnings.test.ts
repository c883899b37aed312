import { describe, expect, it } from 'vitest'
import { SLOT_THRESHOLDS, isLocalPostgres, slotWarnings } from '../../src/main/db/replication-slots'
import type { ReplicationSlot, ReplicationState } from '../../src/shared/protocol/debug-shapes'

const MIB = 1024 * 1024
const GIB = 1024 * MIB

function slot(overrides: Partial<ReplicationSlot>): ReplicationSlot {
  return {
    slot_name: 'ours',
    ours: true,
    slot_type: 'logical',
    plugin: 'pgoutput',
    database: 'postgres',
    active: true,
    wal_status: 'reserved',
    invalidation_reason: null,
    safe_wal_size_bytes: null,
    restart_lsn: '0/1000',
    confirmed_flush_lsn: '0/1000',
    lag_bytes: 0,
    retained_wal_bytes: 0,
    walsender: {
      state: 'streaming',
      sent_lsn: '0/1000',
      flush_lsn: '0/1000',
      write_lag_ms: 1,
      flush_lag_ms: 1,
      replay_lag_ms: 1,
      reply_time: null
    },
    ...overrides
  }
}

function state(slots: ReplicationSlot[], bounds: Partial<ReplicationState> = {}) {
  return {
    slot_name: 'ours',
    current_wal_lsn: '0/1000',
    max_slot_wal_keep_size_bytes: null,
    max_wal_size_bytes: GIB,
    wal_disk_free_bytes: null,
    slots,
    ...bounds
  }
}

const other = (overrides: Partial<ReplicationSlot>) =>
  slot({ slot_name: 'other', ours: false, active: false, walsender: null, ...overrides })

describe('slot warnings: before a slot hurts, and when it does', () => {
  it('none for a streaming slot that keeps up', () => {
    expect(slotWarnings(state([slot({})], { wal_disk_free_bytes: 10 * GIB }))).toEqual([])
  })

  it('a slot at half of max_slot_wal_keep_size, with what is left before it is invalidated', () => {
    const warnings = slotWarnings(
      state([slot({}), other({ retained_wal_bytes: 40 * MIB, safe_wal_size_bytes: 24 * MIB })], {
        max_slot_wal_keep_size_bytes: 64 * MIB
      })
    )
    expect(warnings).toEqual([
      {
        slot_name: 'other',
        level: 'warning',
        message:
          'slot other (no consumer connected) retains 40 MiB of WAL, 63% of max_slot_wal_keep_size 64 MiB: 24 MiB more and it is invalidated'
      }
    ])
    expect(
      slotWarnings(
        state([slot({}), other({ retained_wal_bytes: 31 * MIB })], { max_slot_wal_keep_size_bytes: 64 * MIB })
      )
    ).toEqual([])
  })

  it('a quarter of the free disk, or past 1 GiB when neither bound is known', () => {
    expect(slotWarnings(state([slot({ retained_wal_bytes: 3 * GIB })], { wal_disk_free_bytes: 10 * GIB }))).toEqual([
      {
        slot_name: 'ours',
        level: 'warning',
        message: "slot ours retains 3 GiB of WAL, more than a quarter of the 10 GiB free on Postgres's WAL disk"
      }
    ])
    expect(slotWarnings(state([slot({ retained_wal_bytes: 2 * GIB })], { wal_disk_free_bytes: 10 * GIB }))).toEqual([])
    expect(slotWarnings(state([slot({ retained_wal_bytes: SLOT_THRESHOLDS.unboundedBytes })]))[0]?.message).toMatch(
      /retains 1 GiB of WAL and max_slot_wal_keep_size is unlimited/
    )
  })

  it('critical when WAL is no longer reserved or lost; the lost slot says nothing more', () => {
    const warnings = slotWarnings(
      state([
        slot({ wal_status: 'lost', invalidation_reason: 'wal_removed', active: false, walsender: null }),
        other({ wal_status: 'unreserved', retained_wal_bytes: 80 * MIB })
      ])
    )
    expect(warnings).toEqual([
      {
        slot_name: 'ours',
        level: 'critical',
        message: 'slot ours is invalidated (wal_removed): every shape is refetched'
      },
      {
        slot_name: 'other',
        level: 'critical',
        message:
          'slot other retains 80 MiB of WAL, past max_slot_wal_keep_size: the next checkpoint may remove WAL it needs (then its consumer cannot resume)'
      }
    ])
  })

  it('our slot not streaming, far behind, or missing', () => {
    expect(slotWarnings(state([slot({ active: false, walsender: null })])).map((warning) => warning.message)).toEqual([
      'replication is not streaming: no walsender serves slot ours'
    ])
    const behind = slot({ lag_bytes: 300 * MIB, walsender: { ...slot({}).walsender!, state: 'catchup' } })
    expect(slotWarnings(state([behind])).map((warning) => warning.message)).toEqual([
      'replication is not streaming: the walsender of slot ours is in state catchup',
      'the shape server has not confirmed the last 300 MiB of WAL: it does not keep up with Postgres'
    ])
    expect(slotWarnings(state([other({})]))).toEqual([
      {
        slot_name: 'ours',
        level: 'critical',
        message: 'the replication slot ours does not exist: the shape server is not following Postgres'
      }
    ])
  })

  it('looks at the disk only of a Postgres on this machine', () => {
    expect(isLocalPostgres('postgres://u:p@127.0.0.1:5432/db')).toBe(true)
    expect(isLocalPostgres('postgres://u:p@localhost/db')).toBe(true)
    expect(isLocalPostgres('postgres://u:p@[::1]:5432/db')).toBe(true)
    expect(isLocalPostgres('postgres://u@/db?host=/var/run/postgresql')).toBe(true)
    expect(isLocalPostgres('postgres://u:p@db.example.com/db')).toBe(false)
    expect(isLocalPostgres('postgres://u:p@10.0.0.5/db?host=db.internal')).toBe(false)
    expect(isLocalPostgres('not a url')).toBe(false)
  })
})
