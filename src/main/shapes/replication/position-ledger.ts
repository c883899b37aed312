/**
 * The replication consumer's positions in the WAL and the rules between them, in one place:
 * - `applied`: the last commit handed to the caller and applied (or applied before a restart, from state.json):
 *   transactions committed at or before it are skipped; the next session starts there.
 * - `received`: the highest WAL end the walsender reported; `handed`: the end of the last transaction handed over;
 *   `reported`: the position last told to onPosition (all received when nothing waits, else what was handed).
 * - `durable`: the commit through which the caller reported its writes durable; transactions applied but not durable
 *   yet wait in `undurable` (with `awaitDurable`).
 * - `confirmed`: what may be acknowledged to Postgres; `acknowledged`: what was sent to the current session (-1 before).
 * Positions only move forward, except when the slot is lost: the new slot's positions have nothing to do with the old.
 */
export class PositionLedger {
  private appliedLsn: bigint | null
  private receivedLsn = 0n
  private handedLsn = 0n
  private reportedLsn = 0n
  private durableLsn: bigint
  private undurable: Array<{ commitLsn: bigint; endLsn: bigint }> = []
  private confirmedLsn = 0n
  private acknowledgedLsn = -1n

  constructor(
    appliedLsn: bigint | null,
    private readonly awaitDurable: boolean
  ) {
    this.appliedLsn = appliedLsn
    this.durableLsn = appliedLsn ?? 0n
  }

  /** Where a session starts streaming: after the last applied commit. */
  get startLsn(): bigint {
    return this.appliedLsn ?? 0n
  }

  /** The transaction was not applied before (a restarted session sends again from the last acknowledged position). */
  needsApplying(commitLsn: bigint): boolean {
    return this.appliedLsn === null || commitLsn > this.appliedLsn
  }

  /** The walsender reported its WAL end (a keepalive or a data message). */
  received(walEnd: bigint): void {
    if (walEnd > this.receivedLsn) this.receivedLsn = walEnd
  }

  /** The caller applied the transaction. */
  applied(commitLsn: bigint): void {
    this.appliedLsn = commitLsn
  }

  /** A transaction was applied, or skipped as applied before: acknowledgeable now, or once it is durable. */
  settled(commitLsn: bigint, endLsn: bigint): void {
    if (!this.awaitDurable || commitLsn <= this.durableLsn) this.confirm(endLsn)
    else this.undurable.push({ commitLsn, endLsn })
    if (endLsn > this.handedLsn) this.handedLsn = endLsn
  }

  /** The caller's writes are durable through this commit: the transactions waiting for it are acknowledgeable. */
  durableThrough(commitLsn: bigint): void {
    if (commitLsn > this.durableLsn) this.durableLsn = commitLsn
    let first = this.undurable[0]
    for (; first && first.commitLsn <= this.durableLsn; first = this.undurable[0]) {
      this.undurable.shift()
      this.confirm(first.endLsn)
    }
  }

  /** A keepalive: with nothing received waiting to be applied or made durable, its WAL end is acknowledgeable too. */
  keepalive(walEnd: bigint, idle: boolean): void {
    if (idle && this.undurable.length === 0) this.confirm(walEnd)
  }

  /** The position to report to onPosition, when it moved on: all received when `idle`, else what was handed over. */
  toReport(idle: boolean): bigint | null {
    const position = idle ? this.receivedLsn : this.handedLsn
    if (position <= this.reportedLsn) return null
    this.reportedLsn = position
    return position
  }

  /** The position to send the walsender: when it moved since the last one sent, or `always`; recorded as sent. */
  toAcknowledge(always: boolean): bigint | null {
    if (!always && this.confirmedLsn <= this.acknowledgedLsn) return null
    this.acknowledgedLsn = this.confirmedLsn
    return this.confirmedLsn
  }

  /** A new session: nothing was sent to it yet. */
  sessionOpened(): void {
    this.acknowledgedLsn = -1n
  }

  /** The slot was lost: positions of the lost slot mean nothing to the new one (the database may be another cluster). */
  slotLost(): void {
    this.appliedLsn = null
    this.confirmedLsn = 0n
    this.durableLsn = 0n
    this.undurable = []
    this.receivedLsn = 0n
    this.reportedLsn = 0n
    this.handedLsn = 0n
  }

  private confirm(endLsn: bigint): void {
    if (endLsn > this.confirmedLsn) this.confirmedLsn = endLsn
  }
}
