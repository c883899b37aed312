import { ShapeStream, type ShapeStreamOptions } from './client'
import { MaterialisedShape, type RowChange } from './materialise'
import type { MessageBatch, Row } from './messages'
import type { AppliedSnapshot } from './snapshot-filter'
import type { Subset, SubsetMethod } from './subset'
import type { Membership } from './tags'

/** A stream and the rows it materialises: what a UI table or a test reads. */
export class Shape {
  readonly stream: ShapeStream
  private readonly materialised: MaterialisedShape
  private readonly listeners = new Set<(changes: RowChange[], batch: MessageBatch) => void>()

  constructor(options: ShapeStreamOptions) {
    this.stream = new ShapeStream(options)
    this.materialised = new MaterialisedShape({ log: options.log ?? 'full' })
    this.stream.subscribe((batch) => {
      const changes = this.materialised.apply(batch.messages)
      for (const listener of this.listeners) listener(changes, batch)
    })
  }

  get rows(): ReadonlyMap<string, Row> {
    return this.materialised.rows
  }

  /** A subquery shape's row: its tags and which of its where's positions hold (null for other shapes). */
  membership(key: string): Membership | null {
    return this.materialised.membership(key)
  }

  subscribe(listener: (changes: RowChange[], batch: MessageBatch) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Fetches a subset of the shape into its rows; see `ShapeStream.requestSnapshot`. */
  requestSnapshot(subset: Subset, options: { method?: SubsetMethod } = {}): Promise<AppliedSnapshot> {
    return this.stream.requestSnapshot(subset, options)
  }

  start(): Promise<void> {
    return this.stream.start()
  }

  stop(): void {
    this.stream.stop()
  }
}
