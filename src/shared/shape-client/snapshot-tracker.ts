import { z } from 'zod'
import { type XidSnapshot, visibleIn, widenXid, xidSnapshot } from '../xid-snapshot'
import type { ChangeMessage, Message } from './messages'

/** The metadata of a subset snapshot: the Postgres snapshot its rows were read in. */
export const SnapshotMetadataSchema = z.object({
  xmin: z.string().regex(/^\d+$/),
  xmax: z.string().regex(/^\d+$/),
  xip_list: z.array(z.string().regex(/^\d+$/)),
  database_lsn: z.string().regex(/^\d+$/),
  snapshot_mark: z.number().int()
})
export type SnapshotMetadata = z.infer<typeof SnapshotMetadataSchema>

interface TrackedSnapshot extends XidSnapshot {
  databaseLsn: bigint
  keys: Set<string>
}

/**
 * Remembers the subset snapshots a client applied, so the main stream can skip changes those snapshots already hold:
 * a change is skipped when its key came with a snapshot whose Postgres snapshot saw its transaction committed. A
 * snapshot is forgotten once the stream has passed it (a transaction at or after its xmax, or an LSN at or after its
 * database LSN): every later change is news to it.
 */
export class SnapshotTracker {
  private readonly snapshots = new Map<number, TrackedSnapshot>()

  get size(): number {
    return this.snapshots.size
  }

  add(metadata: SnapshotMetadata, keys: Iterable<string>): void {
    this.snapshots.set(metadata.snapshot_mark, {
      ...xidSnapshot(metadata.xmin, metadata.xmax, metadata.xip_list),
      databaseLsn: BigInt(metadata.database_lsn),
      keys: new Set(keys)
    })
  }

  /** Whether the main stream should drop this change: a snapshot already contains its effect. */
  contains(message: ChangeMessage): boolean {
    return this.containing(message) !== null
  }

  /** The mark of a snapshot that already contains this change, if any. */
  containing(message: ChangeMessage): number | null {
    const xid = Array.isArray(message.headers.txids) ? message.headers.txids[0] : undefined
    if (typeof xid !== 'number') return null
    for (const [mark, snapshot] of this.snapshots) {
      if (snapshot.keys.has(message.key) && visibleIn(snapshot, xid)) return mark
    }
    return null
  }

  /** Forgets the snapshots the stream has moved past, as this message shows. */
  observe(message: Message): void {
    const headers = message.headers as { lsn?: unknown; global_last_seen_lsn?: unknown; txids?: unknown }
    const lsnText =
      typeof headers.lsn === 'string'
        ? headers.lsn
        : typeof headers.global_last_seen_lsn === 'string'
          ? headers.global_last_seen_lsn
          : null
    const lsn = lsnText !== null && /^\d+$/.test(lsnText) ? BigInt(lsnText) : null
    const xid = Array.isArray(headers.txids) && typeof headers.txids[0] === 'number' ? headers.txids[0] : null
    for (const [mark, snapshot] of this.snapshots) {
      if (
        (lsn !== null && lsn >= snapshot.databaseLsn) ||
        (xid !== null && widenXid(xid, snapshot.xmax) >= snapshot.xmax)
      )
        this.snapshots.delete(mark)
    }
  }

  clear(): void {
    this.snapshots.clear()
  }
}
