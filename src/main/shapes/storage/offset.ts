import type { LogOffset } from '../../../shared/protocol'

/** A position in a shape log: `<tx>_<op>`; tx 0 is the snapshot region (op = chunk number), op Infinity is `_inf`. */
export { formatOffset, parseOffset, type LogOffset, type RequestedOffset } from '../../../shared/protocol'

export const SNAPSHOT_END: LogOffset = { tx: 0n, op: Infinity }

export function compareOffsets(a: LogOffset, b: LogOffset): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1
  if (a.op === b.op) return 0
  return a.op < b.op ? -1 : 1
}

/**
 * Where a read after `offset` starts. `<lsn>_0` means "after all of transaction lsn": it is what an SSE client resumes
 * from (`<global_last_seen_lsn>_0` of the last up-to-date), and no answer ends right after op 0 of a transaction with
 * more changes for the shape (see ShapeLog), so a position of that form is never the middle of a transaction.
 */
export const readPosition = (offset: LogOffset): LogOffset =>
  offset.op === 0 && offset.tx > 0n ? { tx: offset.tx, op: Infinity } : offset

export const isSnapshotOffset = (offset: LogOffset): boolean => offset.tx === 0n && offset.op !== Infinity
