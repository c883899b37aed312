/** A Postgres snapshot (`pg_current_snapshot()`) with its xid8 values as bigints. */
export interface XidSnapshot {
  xmin: bigint
  xmax: bigint
  /** Transactions in progress when the snapshot was taken. */
  xip: ReadonlySet<bigint>
}

export function xidSnapshot(xmin: string, xmax: string, xip: readonly string[]): XidSnapshot {
  return { xmin: BigInt(xmin), xmax: BigInt(xmax), xip: new Set(xip.map(BigInt)) }
}

/** Widens a 32-bit xid (what the replication stream and change messages carry) to the xid8 near `reference`. */
export function widenXid(xid: number, reference: bigint): bigint {
  let full = (reference & ~0xffffffffn) | BigInt(xid >>> 0)
  if (full > reference + 0x80000000n) full -= 0x100000000n
  else if (full + 0x80000000n < reference) full += 0x100000000n
  return full
}

/** Whether a transaction had committed when the snapshot was taken, i.e. its changes are in what the snapshot read. */
export function visibleIn(snapshot: XidSnapshot, xid: number): boolean {
  const full = widenXid(xid, snapshot.xmax)
  return full < snapshot.xmin || (full < snapshot.xmax && !snapshot.xip.has(full))
}
