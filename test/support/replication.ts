import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pg from 'pg'
import { expect, vi } from 'vitest'
import { scramVerifier } from '../../src/main/db/scram'
import { parseLsn, type ReplicatedTransaction } from '../../src/main/shapes/replication'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/main/db/embedded'
import type { TestPostgres } from './postgres'

/** Records what a replication consumer hands over (and the walsender's keepalives), and lets a test wait for it. */
export class TransactionLog {
  readonly transactions: ReplicatedTransaction[] = []
  readonly slotLosses: string[] = []
  readonly keepalives: Array<{ walEnd: bigint; answered: boolean }> = []

  readonly onTransaction = async (transaction: ReplicatedTransaction): Promise<void> => {
    this.transactions.push(transaction)
  }

  readonly onSlotLost = async (reason: string): Promise<void> => {
    this.slotLosses.push(reason)
  }

  readonly onKeepalive = (keepalive: { walEnd: bigint; answered: boolean }): void => {
    this.keepalives.push(keepalive)
  }

  /** Waits for the first keepalive from index `from` on whose walEnd is at least `lsn` (the walsender sent all before it). */
  async keepaliveAfter(lsn: bigint, from = 0): Promise<{ walEnd: bigint; answered: boolean }> {
    let found: { walEnd: bigint; answered: boolean } | undefined
    await vi.waitFor(
      () => {
        found = this.keepalives.slice(from).find((keepalive) => keepalive.walEnd >= lsn)
        expect(found, `a keepalive at or past ${lsn}`).toBeDefined()
      },
      { timeout: 20_000, interval: 5 }
    )
    return found!
  }

  /** Waits until the handed-over transactions satisfy `check` (which throws until they do). */
  async waitFor(check: (transactions: ReplicatedTransaction[]) => void, timeout = 20_000): Promise<void> {
    await vi.waitFor(() => check(this.transactions), { timeout, interval: 20 })
  }
}

/**
 * Waits until the walsender of the logical slot `slotName` (of every active logical slot when null) has sent the WAL
 * through `lsn` to its consumer (pg_stat_replication.sent_lsn).
 */
export async function sentThrough(pool: pg.Pool, lsn: bigint, slotName: string | null = null): Promise<void> {
  await vi.waitFor(
    async () => {
      const { rows } = await pool.query<{ lsn: string | null }>(
        `SELECT min(r.sent_lsn)::text AS lsn FROM pg_stat_replication r
           JOIN pg_replication_slots s ON s.active_pid = r.pid
          WHERE s.slot_type = 'logical' AND ($1::text IS NULL OR s.slot_name = $1)`,
        [slotName]
      )
      expect(
        rows[0]?.lsn ? parseLsn(rows[0].lsn) : 0n,
        `sent_lsn of ${slotName ?? 'the logical slots'}`
      ).toBeGreaterThanOrEqual(lsn)
    },
    { timeout: 20_000, interval: 20 }
  )
}

/** Stops the cluster and starts it again on the same folder and port: a Postgres restart as clients see it. */
export async function restartPostgres(server: TestPostgres | EmbeddedPostgresHandle): Promise<EmbeddedPostgresHandle> {
  await server.stop()
  return startEmbeddedPostgres({ dataDir: server.dataDir, port: server.port })
}

/**
 * A new, empty cluster on the stopped one's port that takes the same credentials: to clients, the database was
 * replaced (a restored backup, a recreated container).
 */
export async function startReplacementCluster(
  server: EmbeddedPostgresHandle,
  dataDir: string
): Promise<EmbeddedPostgresHandle> {
  const replacement = await startEmbeddedPostgres({ dataDir, port: server.port })
  const password = decodeURIComponent(new URL(server.url).password)
  const client = new pg.Client({ connectionString: replacement.url })
  await client.connect()
  await client.query(`ALTER ROLE postgres PASSWORD '${scramVerifier(password)}'`)
  await client.end()
  await writeFile(join(dataDir, 'syncscope-password'), password)
  return { ...replacement, url: server.url }
}

/** Starts the stopped cluster's folder with `wal_level = replica`, as a Postgres that cannot be followed. */
export async function startWithoutLogicalWal(server: EmbeddedPostgresHandle): Promise<{ stop(): Promise<void> }> {
  return startEmbeddedPostgres({ dataDir: server.dataDir, port: server.port, settings: { wal_level: 'replica' } })
}

/** The `id` of every row the transactions insert, in order. */
export function insertedIds(transactions: ReplicatedTransaction[]): string[] {
  return transactions.flatMap((tx) =>
    tx.changes.flatMap((change) => (change.kind === 'insert' ? [change.new.id ?? ''] : []))
  )
}

/** from, from + 1, …, to as the text Postgres gives for integers. */
export function idRange(from: number, to: number): string[] {
  return Array.from({ length: to - from + 1 }, (_, index) => String(from + index))
}

/** Each transaction came once, in commit order. */
export function expectCommitOrder(transactions: ReplicatedTransaction[]): void {
  transactions.slice(1).forEach((tx, index) => expect(tx.commitLsn).toBeGreaterThan(transactions[index]!.commitLsn))
}
