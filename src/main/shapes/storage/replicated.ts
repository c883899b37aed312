/*
 * A committed transaction as replication decodes it from pgoutput: the form in which changes reach the stages above
 * storage that turn them into log entries (replication's collector, subquery/'s move-ins and move-outs).
 */

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
