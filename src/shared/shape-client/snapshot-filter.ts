import { isChangeMessage, type ChangeMessage, type ControlMessage, type Message, type MessageBatch } from './messages'
import { SnapshotTracker, type SnapshotMetadata } from './snapshot-tracker'
import type { SubsetMethod } from './subset'

/** A subset snapshot a stream applied, and the main-stream changes it made redundant. */
export interface AppliedSnapshot {
  metadata: SnapshotMetadata
  rows: ChangeMessage[]
  method: SubsetMethod
  /** Changes the stream dropped afterwards because this snapshot already held them. */
  dropped: ChangeMessage[]
}

/** The control message a stream publishes after a snapshot's rows: its metadata, as the official client does. */
export function snapshotEnd(metadata: SnapshotMetadata): ControlMessage {
  return { headers: { control: 'snapshot-end', ...metadata } }
}

/**
 * Sits between a stream and its subscribers once subset snapshots are involved. While a snapshot is in flight the
 * stream's batches are held, so the snapshot's rows are published before any change the stream received meanwhile
 * (changes committed after the snapshot must land on top of its rows, not under them). Every later change that a
 * snapshot already contains is dropped.
 */
export class SnapshotFilter {
  readonly applied: AppliedSnapshot[] = []
  private readonly tracker = new SnapshotTracker()
  private inFlight = 0
  private held: MessageBatch[] = []

  constructor(
    private readonly deliver: (batch: MessageBatch) => void,
    private readonly onDrop: (message: ChangeMessage, snapshot: AppliedSnapshot) => void
  ) {}

  publish(batch: MessageBatch): void {
    if (this.inFlight > 0) {
      this.held.push(batch)
      return
    }
    const messages = batch.messages.filter((message) => this.keeps(message))
    if (messages.length > 0) this.deliver({ ...batch, messages })
  }

  begin(): void {
    this.inFlight += 1
  }

  /** A snapshot request finished: its rows and snapshot-end go out first (when it succeeded), then what was held. */
  end(snapshot: { applied: AppliedSnapshot; requestId: number } | null): void {
    this.inFlight -= 1
    if (snapshot) {
      const { applied, requestId } = snapshot
      this.applied.push(applied)
      this.tracker.add(
        applied.metadata,
        applied.rows.map((row) => row.key)
      )
      this.deliver({ messages: [...applied.rows, snapshotEnd(applied.metadata)], requestId })
    }
    if (this.inFlight > 0) return
    const held = this.held
    this.held = []
    for (const batch of held) this.publish(batch)
  }

  /** A must-refetch: what was held belongs to the discarded shape, and the snapshots' marks mean nothing any more. */
  reset(): void {
    this.held = []
    this.tracker.clear()
  }

  private keeps(message: Message): boolean {
    const mark = isChangeMessage(message) ? this.tracker.containing(message) : null
    this.tracker.observe(message)
    if (mark === null || !isChangeMessage(message)) return true
    const snapshot = this.applied.findLast((candidate) => candidate.metadata.snapshot_mark === mark)
    if (snapshot) {
      snapshot.dropped.push(message)
      this.onDrop(message, snapshot)
    }
    return false
  }
}
