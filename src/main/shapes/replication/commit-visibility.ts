import type pg from 'pg'
import { type XidSnapshot, visibleIn, xidSnapshot } from '../../../shared/xid-snapshot'
import { parseSnapshot } from '../snapshot/snapshot'

/** Transactions taken and not yet seen in a snapshot: beyond this many, a snapshot is read to drop those it includes. */
const PRUNE_AT = 10_000
/** Pauses between snapshots while a committed transaction is not visible yet, in ms (the last one repeats). */
const POLL_MS = [1, 2, 5, 10, 20, 50, 100]
/** How long a transaction the stream delivered may stay invisible before waiting for it fails. */
export const VISIBILITY_WAIT_MS = 30_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The pause before the `attempt`-th new snapshot while waiting for a transaction to become visible. */
export const visibilityPollMs = (attempt: number): number => POLL_MS[Math.min(attempt, POLL_MS.length - 1)] as number

/** A transaction the stream delivered that a snapshot did not include. */
export class CommitNotVisibleError extends Error {
  override readonly name = 'CommitNotVisibleError'
  constructor(xid: number, ms: number) {
    super(
      `transaction ${xid} was committed and replicated but was still not visible to new snapshots after ${ms / 1000} s`
    )
  }
}

/**
 * Which committed transactions a new snapshot may still lack. Postgres writes (and replicates) a commit before the
 * transaction leaves the list of running ones, so for a moment a transaction the replication stream has delivered is
 * invisible to new snapshots; on a loaded machine the moment lasts milliseconds. A snapshot that is to stand for
 * "everything the stream delivered so far" (a shape's first snapshot, a move-in's query) must include them all.
 * Every transaction taken from the stream is kept here until a snapshot is seen to include it.
 */
export class CommitVisibility {
  /** Transactions taken from the stream, in commit order, that no snapshot read since was seen to include. */
  private unseen: Array<{ xid: number; lsn: bigint }> = []
  private lastLsn = 0n
  private pruning: Promise<void> | null = null

  constructor(private readonly pool: pg.Pool) {}

  /** The commit LSN of the last transaction taken. */
  get lastTaken(): bigint {
    return this.lastLsn
  }

  /** A committed transaction was taken from the stream (before it is routed). */
  taken(xid: number, lsn: bigint): void {
    this.unseen.push({ xid, lsn })
    if (lsn > this.lastLsn) this.lastLsn = lsn
    if (this.unseen.length > PRUNE_AT && !this.pruning)
      this.pruning = this.readSnapshot()
        .then((snapshot) => void this.lacks(snapshot, 0n))
        .catch(() => undefined)
        .finally(() => (this.pruning = null))
  }

  /**
   * Forgets the transactions the snapshot includes (every later snapshot includes them too) and tells whether it lacks
   * one taken at or before `through`, those of `except` aside.
   */
  lacks(snapshot: XidSnapshot, through: bigint, except?: ReadonlySet<number>): number | null {
    this.unseen = this.unseen.filter((taken) => !visibleIn(snapshot, taken.xid))
    return this.unseen.find((taken) => taken.lsn <= through && !except?.has(taken.xid))?.xid ?? null
  }

  /** Resolves once a snapshot taken from now on includes every transaction taken so far. */
  async awaitTaken(signal?: AbortSignal): Promise<void> {
    const through = this.lastLsn
    const started = Date.now()
    for (let attempt = 0; this.unseen.some((taken) => taken.lsn <= through); attempt++) {
      const lacking = this.lacks(await this.readSnapshot(), through)
      if (lacking === null || signal?.aborted) return
      if (Date.now() - started > VISIBILITY_WAIT_MS) throw new CommitNotVisibleError(lacking, VISIBILITY_WAIT_MS)
      await sleep(visibilityPollMs(attempt))
    }
  }

  private async readSnapshot(): Promise<XidSnapshot> {
    const { rows } = await this.pool.query<{ snapshot: string }>('SELECT pg_current_snapshot()::text AS snapshot')
    const { xmin, xmax, xipList } = parseSnapshot(rows[0]?.snapshot ?? '0:0:', '0/0')
    return xidSnapshot(xmin, xmax, xipList)
  }
}
