import { dirname, join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { EmbeddedPostgresHandle } from '../../../src/main/db/embedded'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from '../../support/postgres'
import {
  expectCommitOrder,
  idRange,
  insertedIds,
  restartPostgres,
  startReplacementCluster,
  startWithoutLogicalWal,
  TransactionLog
} from '../../support/replication'
import { type ReplicationStream, startReplication } from '../../../src/main/shapes/replication'

let server: TestPostgres
/** The cluster as currently running: the first start, or the latest restart. */
let current: EmbeddedPostgresHandle
let pool: pg.Pool

beforeAll(async () => {
  server = await startTestPostgres()
  current = server
  pool = new pg.Pool({ connectionString: server.url, max: 2 })
  ignoreConnectionErrors(pool) // connections die with every restart
})

afterAll(async () => {
  await pool?.end()
  await current?.stop()
  await server?.destroy()
})

/** Inserts each id in its own transaction, retrying while Postgres is coming back (a retried commit may have landed). */
async function insertOneByOne(table: string, from: number, to: number): Promise<void> {
  for (let id = from; id <= to; id++) {
    for (let attempt = 0; ; attempt++) {
      try {
        await pool.query(`INSERT INTO ${table} VALUES ($1) ON CONFLICT DO NOTHING`, [id])
        break
      } catch (error) {
        if (attempt === 50) throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  }
}

/** A consumer slower than the writer, so changes are in flight when Postgres goes away. */
async function followSlowly(
  table: string,
  slotName: string,
  statuses: string[]
): Promise<{ log: TransactionLog; stream: ReplicationStream }> {
  const log = new TransactionLog()
  const stream = await startReplication({
    connectionString: server.url,
    slotName,
    publicationName: `${slotName}_pub`,
    appliedLsn: null,
    onTransaction: async (tx) => {
      await new Promise((resolve) => setTimeout(resolve, 3))
      await log.onTransaction(tx)
    },
    onSlotLost: log.onSlotLost,
    onStatus: (status) => statuses.push(status.state)
  })
  await stream.ensureTable('public', table)
  return { log, stream }
}

function expectExactlyOnce(log: TransactionLog, ids: string[]): void {
  expect(insertedIds(log.transactions)).toEqual(ids)
  expectCommitOrder(log.transactions)
}

describe('following Postgres across restarts', () => {
  it('delivers every transaction exactly once across a Postgres restart in the middle of a stream', async () => {
    await pool.query('CREATE TABLE across_restart (id int PRIMARY KEY)')
    const statuses: string[] = []
    const { log, stream } = await followSlowly('across_restart', 'restart_slot', statuses)
    try {
      await insertOneByOne('across_restart', 1, 60)
      await log.waitFor((txs) => expect(txs.length).toBeGreaterThanOrEqual(10))
      current = await restartPostgres(current)
      await insertOneByOne('across_restart', 61, 120)
      await log.waitFor((txs) => expect(insertedIds(txs)).toHaveLength(120))
      expectExactlyOnce(log, idRange(1, 120))
      expect(statuses).toContain('reconnecting')
      expect(statuses.at(-1)).toBe('streaming')
      expect(log.slotLosses).toEqual([])
    } finally {
      await stream.stop()
    }
  })

  it('delivers every transaction exactly once when a crash makes Postgres send applied transactions again', async () => {
    await pool.query('CREATE TABLE across_crash (id int PRIMARY KEY)')
    const statuses: string[] = []
    const { log, stream } = await followSlowly('across_crash', 'crash_slot', statuses)
    try {
      await pool.query('CHECKPOINT')
      await insertOneByOne('across_crash', 1, 40)
      await log.waitFor((txs) => expect(txs.length).toBeGreaterThanOrEqual(20))
      const { rows } = await pool.query<{ pid: number }>(
        `SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = 'crash_slot'`
      )
      // A killed backend makes the postmaster restart every process and recover; the slot falls back to its checkpointed position.
      process.kill(rows[0]!.pid, 'SIGKILL')
      await insertOneByOne('across_crash', 41, 80)
      await log.waitFor((txs) => expect(insertedIds(txs)).toHaveLength(80))
      expectExactlyOnce(log, idRange(1, 80))
      expect(statuses).toContain('reconnecting')
    } finally {
      await stream.stop()
    }
  })

  it('reports an invalidated slot as lost, replaces it and follows from there', async () => {
    await pool.query('CREATE TABLE across_invalidation (id int PRIMARY KEY)')
    const { log, stream } = await followSlowly('across_invalidation', 'invalidated_slot', [])
    await insertOneByOne('across_invalidation', 1, 1)
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1']))
    const applied = stream.lastLsn
    await stream.stop()

    await pool.query(`ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'`)
    await pool.query('SELECT pg_reload_conf()')
    try {
      for (let segment = 0; segment < 4; segment++) {
        await insertOneByOne('across_invalidation', 100 + segment, 100 + segment)
        await pool.query('SELECT pg_switch_wal()')
      }
      await pool.query('CHECKPOINT')
      const { rows } = await pool.query(
        `SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'invalidated_slot'`
      )
      expect(rows).toEqual([{ wal_status: 'lost' }])

      const again = new TransactionLog()
      const resumed = await startReplication({
        connectionString: server.url,
        slotName: 'invalidated_slot',
        publicationName: 'invalidated_slot_pub',
        appliedLsn: applied,
        onTransaction: again.onTransaction,
        onSlotLost: again.onSlotLost
      })
      try {
        expect(again.slotLosses).toEqual([
          expect.stringMatching(/^replication slot "invalidated_slot" was invalidated \(wal_removed\)$/)
        ])
        await insertOneByOne('across_invalidation', 2, 2)
        await again.waitFor((txs) => expect(insertedIds(txs)).toEqual(['2']))
      } finally {
        await resumed.stop()
      }
    } finally {
      await pool.query('ALTER SYSTEM RESET max_slot_wal_keep_size')
      await pool.query('SELECT pg_reload_conf()')
    }
  })

  it('reports the slot as lost when the database is replaced by a new cluster, and follows the new one', async () => {
    await pool.query('CREATE TABLE replaced (id int PRIMARY KEY)')
    await pool.query(`INSERT INTO replaced SELECT generate_series(1, 20000)`)
    const statuses: string[] = []
    const { log, stream } = await followSlowly('replaced', 'replaced_slot', statuses)
    try {
      await insertOneByOne('replaced', 20001, 20001)
      await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['20001']))
      const oldLsn = stream.lastLsn
      await current.stop()
      current = await startReplacementCluster(current, join(dirname(server.dataDir), 'replacement'))
      await vi.waitFor(() => expect(log.slotLosses).toEqual(['replication slot "replaced_slot" does not exist']), {
        timeout: 20_000
      })
      await vi.waitFor(() => expect(statuses.at(-1)).toBe('streaming'), { timeout: 10_000 })

      await pool.query('CREATE TABLE replaced (id int PRIMARY KEY)')
      await stream.ensureTable('public', 'replaced')
      await insertOneByOne('replaced', 1, 1)
      await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['20001', '1']))
      expect(log.transactions.at(-1)!.commitLsn).toBeLessThan(oldLsn)
    } finally {
      await stream.stop()
    }
  })

  it('refuses a Postgres without wal_level = logical, naming the setting and the fix', async () => {
    await pool.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots')
    await current.stop()
    const replicaOnly = await startWithoutLogicalWal(current)
    try {
      const starting = startReplication({
        connectionString: server.url,
        slotName: 'never',
        publicationName: 'never',
        appliedLsn: null,
        onTransaction: async () => undefined,
        onSlotLost: async () => undefined
      })
      await expect(starting).rejects.toThrow(
        "wal_level is 'replica', but following Postgres needs wal_level = logical: run ALTER SYSTEM SET wal_level = logical and restart Postgres"
      )
    } finally {
      await replicaOnly.stop()
    }
  })
})
