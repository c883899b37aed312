/** A row as Postgres's text output, column name → text, SQL NULL as null. */
export type Row = Record<string, string | null>

export interface RelationColumn {
  name: string
  typeOid: number
  typeMod: number
  /** Part of the replica identity (every column under REPLICA IDENTITY FULL). */
  isKey: boolean
}

export interface RelationInfo {
  oid: number
  schema: string
  table: string
  columns: RelationColumn[]
}

export type ReplicatedChange =
  | { kind: 'relation'; relation: RelationInfo }
  | { kind: 'insert'; relation: RelationInfo; new: Row }
  /**
   * `old` is the whole old row under REPLICA IDENTITY FULL (what ensureTable sets), else the key columns or nothing.
   * Columns pgoutput marks as unchanged TOAST are filled into `new` from `old`, and left out when `old` lacks them.
   */
  | { kind: 'update'; relation: RelationInfo; old: Row; new: Row }
  | { kind: 'delete'; relation: RelationInfo; old: Row }
  | { kind: 'truncate'; relations: RelationInfo[] }

export interface ReplicatedTransaction {
  /** The 32-bit transaction id from the Begin message. */
  xid: number
  /** The commit LSN from the Begin message (final_lsn). */
  commitLsn: bigint
  commitTime: Date
  changes: ReplicatedChange[]
}

export interface ReplicationOptions {
  connectionString: string
  slotName: string
  publicationName: string
  /** Transactions whose commitLsn <= this were already applied by the caller (persisted): skip them on (re)start. */
  appliedLsn: bigint | null
  /** Called sequentially, one committed transaction at a time; its LSN is acknowledged to Postgres only after the promise resolves. */
  onTransaction(tx: ReplicatedTransaction): Promise<void>
  /** The slot disappeared (dropped, or the database was replaced): the caller invalidates every shape; the consumer recreates the slot and continues from the current WAL position. */
  onSlotLost(reason: string): Promise<void>
  /**
   * Acknowledge a transaction only once durableThrough() reported its commit LSN (the caller's writes are on disk),
   * not as soon as onTransaction resolved.
   */
  awaitDurable?: boolean
  /**
   * The stream's received position moved on: every transaction that ends at or before `lsn` (as the walsender reports
   * WAL positions, XLogData and keepalive walEnd) has been handed to onTransaction and its promise resolved.
   */
  onPosition?(lsn: bigint): void
  /**
   * Each keepalive of the walsender, and whether a status update answered it: only when the confirmed position moved
   * or the walsender asked (an answer to every one makes it ping straight back while our position trails its own).
   */
  onKeepalive?(keepalive: { walEnd: bigint; answered: boolean }): void
  onStatus?(status: { state: 'streaming' | 'reconnecting'; error?: string }): void
  log?(line: string): void
}

export interface ReplicationStream {
  /** Adds the table to the publication (if absent), sets REPLICA IDENTITY FULL (if not set), then waits until every transaction that was in progress before the table joined the publication has finished, so a snapshot taken afterwards plus the stream misses nothing. Clear error when not permitted. */
  ensureTable(schema: string, table: string): Promise<void>
  /** Commit LSN of the last transaction handed to onTransaction (or appliedLsn); 0 when neither exists, e.g. after the slot was lost. */
  readonly lastLsn: bigint
  /** With `awaitDurable`: everything the caller applied through this commit LSN is durable and may be acknowledged. */
  durableThrough(commitLsn: bigint): void
  /** pg_current_wal_lsn() as a bigint. */
  currentWalLsn(): Promise<bigint>
  stop(): Promise<void>
}
