import type { RecordEntry, ShapeRecorder } from '../../../../shared/shape-client'

export type LogEntry = Extract<RecordEntry, { type: 'message' | 'note' }>
export type FrameEntry = Extract<RecordEntry, { type: 'sse-frame' }>

/** Sequence numbers in order, the oldest dropped as the recorder trims its entries. */
export class SeqList {
  readonly seqs: number[] = []
  /** How many were dropped from the front so far. */
  dropped = 0

  push(seq: number): void {
    this.seqs.push(seq)
  }

  prune(firstKept: number): void {
    let count = 0
    while (count < this.seqs.length && (this.seqs[count] as number) < firstKept) count += 1
    if (count === 0) return
    this.seqs.splice(0, count)
    this.dropped += count
  }

  /** Where the first seq after `seq` is. */
  indexAfter(seq: number): number {
    let low = 0
    let high = this.seqs.length
    while (low < high) {
      const middle = (low + high) >> 1
      if ((this.seqs[middle] as number) <= seq) low = middle + 1
      else high = middle
    }
    return low
  }
}

/** The seqs of a list that pass a test (a view's filter and search), kept up to date as the list grows and is trimmed. */
export class FilteredSeqs {
  readonly matched = new SeqList()
  private examined = -1

  constructor(
    readonly query: string,
    private readonly test: (seq: number) => boolean
  ) {}

  update(list: SeqList, firstKept: number): number[] {
    this.matched.prune(firstKept)
    for (let index = list.indexAfter(this.examined); index < list.seqs.length; index += 1) {
      const seq = list.seqs[index] as number
      if (this.test(seq)) this.matched.push(seq)
      this.examined = seq
    }
    return this.matched.seqs
  }
}

/**
 * Numbers a recorder's entries as they come (entry `seq` is `entries[seq - trimmed]` while the recorder keeps it) and
 * lists the Log's (messages, notes) and the SSE view's (raw frames). Told of every entry, so the one it saw last is
 * never trimmed before it looks again: how far that entry moved down is how many the recorder trimmed.
 */
export class RecorderIndex {
  readonly log = new SeqList()
  readonly frames = new SeqList()
  private trimmed = 0
  private last: RecordEntry | null = null
  private lastIndex = -1

  constructor(private readonly recorder: ShapeRecorder) {
    recorder.subscribe(() => this.scan())
  }

  /** The seq of the oldest entry the recorder still has. */
  get firstKept(): number {
    return this.trimmed
  }

  entry(seq: number): RecordEntry | undefined {
    return this.recorder.entries[seq - this.trimmed]
  }

  private scan(): void {
    const entries = this.recorder.entries
    const newest = entries[entries.length - 1]
    if (newest === undefined || newest === this.last) return
    let from = 0
    if (this.last) {
      const index = entries.lastIndexOf(this.last)
      if (index === -1) {
        // not expected (see above): start again from what the recorder holds
        this.trimmed += this.lastIndex + 1
      } else {
        this.trimmed += this.lastIndex - index
        from = index + 1
      }
    }
    for (let index = from; index < entries.length; index += 1) {
      const entry = entries[index] as RecordEntry
      const seq = this.trimmed + index
      if (entry.type === 'message' || entry.type === 'note') this.log.push(seq)
      else if (entry.type === 'sse-frame') this.frames.push(seq)
    }
    this.last = newest
    this.lastIndex = entries.length - 1
    this.log.prune(this.trimmed)
    this.frames.prune(this.trimmed)
  }
}
