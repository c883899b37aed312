import type pg from 'pg'
import { type XidSnapshot, visibleIn, xidSnapshot } from '../../../shared/xid-snapshot'
import { parseSnapshot } from './snapshot'

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

/** A snapshot being checked: open it before the snapshot is taken, close it (`done`) once checked. */
export interface SnapshotCheck {
  /**
   * A transaction taken before the check was opened (those of `except` aside) that the snapshot does not include, or
   * null. One taken since may have committed after the snapshot was taken: the snapshot need not include it.
   */
  lacks(snapshot: XidSnapshot, except?: ReadonlySet<number>): number | null
  done(): void
}

interface Taken {
  xid: number
  lsn: bigint
  /** When a snapshot was first seen to include it (on the clock of checks), or null. */
  seenAt: number | null
}

/**
 * Which committed transactions a new snapshot may still lack. Postgres writes (and replicates) a commit before the
 * transaction leaves the list of running ones, so for a moment a transaction the replication stream has delivered is
 * invisible to new snapshots; on a loaded machine the moment lasts milliseconds. A snapshot that is to stand for
 * "everything the stream delivered so far" (a shape's first snapshot, a move-in's query) must include them all.
 *
 * Every transaction taken from the stream is kept until a snapshot is seen to include it and every check opened
 * before that was seen is done: a snapshot taken earlier but checked later may still lack it.
 */
export class CommitVisibility {
  private kept: Taken[] = []
  private lastLsn = 0n
  /** Orders check openings and sightings: a check opened after a sighting takes a snapshot that includes it. */
  private clock = 0
  private readonly open = new Set<number>()
  private pruning: Promise<void> | null = null

  constructor(private readonly pool: pg.Pool) {}

  /** The commit LSN of the last transaction taken. */
  get lastTaken(): bigint {
    return this.lastLsn
  }

  /** Transactions kept (not yet known to be in every snapshot checked from now on). */
  get size(): number {
    return this.kept.length
  }

  /** A committed transaction was taken from the stream (before it is routed). */
  taken(xid: number, lsn: bigint): void {
    this.kept.push({ xid, lsn, seenAt: null })
    if (lsn > this.lastLsn) this.lastLsn = lsn
    if (this.kept.length > PRUNE_AT && !this.pruning)
      this.pruning = this.probe(0n)
        .then(() => undefined)
        .catch(() => undefined)
        .finally(() => (this.pruning = null))
  }

  /** Opens a check, before its snapshot is taken: of the transactions taken until now (or through the LSN given). */
  check(through = this.lastLsn): SnapshotCheck {
    const opened = ++this.clock
    this.open.add(opened)
    return {
      lacks: (snapshot, except) => {
        const seenAt = ++this.clock
        let lacking: number | null = null
        for (const taken of this.kept) {
          if (visibleIn(snapshot, taken.xid)) taken.seenAt ??= seenAt
          else if (lacking === null && taken.lsn <= through && !except?.has(taken.xid)) lacking = taken.xid
        }
        return lacking
      },
      done: () => {
        if (this.open.delete(opened)) this.forget()
      }
    }
  }

  /** Drops the transactions seen before every open check was opened. */
  private forget(): void {
    let oldest = Infinity
    for (const opened of this.open) oldest = Math.min(oldest, opened)
    this.kept = this.kept.filter((taken) => taken.seenAt === null || taken.seenAt > oldest)
  }

  /** Resolves once a snapshot taken from now on includes every transaction taken so far. */
  async awaitTaken(signal?: AbortSignal): Promise<void> {
    const through = this.lastLsn
    const started = Date.now()
    // a transaction a snapshot was seen to include is in every snapshot taken after
    for (let attempt = 0; this.kept.some((taken) => taken.lsn <= through && taken.seenAt === null); attempt++) {
      const lacking = await this.probe(through)
      if (lacking === null || signal?.aborted) return
      if (Date.now() - started > VISIBILITY_WAIT_MS) throw new CommitNotVisibleError(lacking, VISIBILITY_WAIT_MS)
      await sleep(visibilityPollMs(attempt))
    }
  }

  /** Takes a snapshot of its own: what it lacks at or before `through`. */
  private async probe(through: bigint): Promise<number | null> {
    const check = this.check(through)
    try {
      const { rows } = await this.pool.query<{ snapshot: string }>('SELECT pg_current_snapshot()::text AS snapshot')
      const { xmin, xmax, xipList } = parseSnapshot(rows[0]?.snapshot ?? '0:0:', '0/0')
      return check.lacks(xidSnapshot(xmin, xmax, xipList))
    } finally {
      check.done()
    }
  }
}
