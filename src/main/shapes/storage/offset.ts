/** A position in a shape log: `<tx>_<op>`; tx 0 is the snapshot region (op = chunk number), op Infinity is `_inf`. */
export interface LogOffset {
  tx: bigint
  op: number
}

export type RequestedOffset = { kind: 'start' } | { kind: 'now' } | { kind: 'at'; offset: LogOffset }

export const SNAPSHOT_END: LogOffset = { tx: 0n, op: Infinity }

const OFFSET_FORM = /^(\d+)_(\d+|inf)$/

/** `-1`, `now`, `<int>_<int>` or `<int>_inf`; null when malformed. `-1_0` is accepted as `-1`, as the reference does. */
export function parseOffset(text: string): RequestedOffset | null {
  if (text === '-1' || text === '-1_0') return { kind: 'start' }
  if (text === 'now') return { kind: 'now' }
  const match = OFFSET_FORM.exec(text)
  if (!match?.[1] || !match[2]) return null
  const tx = BigInt(match[1])
  if (tx >= 2n ** 64n) return null
  const op = match[2] === 'inf' ? Infinity : Number(match[2])
  if (!Number.isSafeInteger(op) && op !== Infinity) return null
  return { kind: 'at', offset: { tx, op } }
}

export function formatOffset(offset: LogOffset): string {
  return `${offset.tx}_${offset.op === Infinity ? 'inf' : offset.op}`
}

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
export const readPosition = (offset: LogOffset): LogOffset => (offset.op === 0 && offset.tx > 0n ? { tx: offset.tx, op: Infinity } : offset)

export const isSnapshotOffset = (offset: LogOffset): boolean => offset.tx === 0n && offset.op !== Infinity
