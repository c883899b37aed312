/** Commit times kept (the oldest forgotten first); enough for any transaction still in a shape's recent appends. */
const COMMITS_KEPT = 50_000
/** Appends a shape remembers. */
export const APPENDS_KEPT = 1_000

/** Milliseconds since the epoch, with sub-millisecond precision. */
const clock = (): number => performance.timeOrigin + performance.now()

/**
 * When Postgres committed each recent transaction (pgoutput's Begin carries the commit timestamp), by commit LSN:
 * the start of the latency the workbench shows (`GET /v1/debug/commit-times`, docs/protocol.md).
 */
export class CommitTimes {
  private readonly byLsn = new Map<bigint, number>()

  committed(lsn: bigint, at: Date): void {
    this.byLsn.set(lsn, at.getTime())
    if (this.byLsn.size > COMMITS_KEPT) {
      for (const oldest of this.byLsn.keys()) {
        this.byLsn.delete(oldest)
        if (this.byLsn.size <= COMMITS_KEPT) break
      }
    }
  }

  /** Milliseconds since the epoch; null when not known (before the server started, or forgotten). */
  at(lsn: bigint): number | null {
    return this.byLsn.get(lsn) ?? null
  }
}

export interface ShapeAppend {
  lsn: bigint
  xid: number
  /** When the server appended the transaction's changes to the shape's log (ms since the epoch). */
  appendedAt: number
  changes: number
}

/** A shape's last appends, in log (commit LSN) order. */
export class AppendTimes {
  private readonly appends: ShapeAppend[] = []

  appended(lsn: bigint, xid: number, changes: number): void {
    this.appends.push({ lsn, xid, appendedAt: clock(), changes })
    if (this.appends.length > APPENDS_KEPT * 2) this.appends.splice(0, this.appends.length - APPENDS_KEPT)
  }

  /** The appends of transactions after `lsn`, oldest first, at most `limit`. */
  after(lsn: bigint, limit: number): ShapeAppend[] {
    const kept = this.appends.slice(-APPENDS_KEPT)
    return kept.filter((append) => append.lsn > lsn).slice(0, limit)
  }
}
