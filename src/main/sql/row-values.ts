import { WhereRuntimeError } from './errors'

/** A row as Postgres prints it (pgoutput and COPY text): column name → text, NULL as null. */
export type Row = Readonly<Record<string, string | null>>

/** An evaluation that Postgres would have refused on this row, remembered so that every where sees the same error. */
class Refused {
  constructor(readonly error: WhereRuntimeError) {}
}

/** Numbers for the keys of shared values (a column read as a type, lower() of it), the same for every where. */
const slots = new Map<string, number>()

/** The slot of a shared value, named by a key that always means the same expression; given out once per key. */
export function slotOf(key: string): number {
  let slot = slots.get(key)
  if (slot === undefined) {
    slot = slots.size
    slots.set(key, slot)
  }
  return slot
}

/**
 * One changed row while it is routed: its typed values (and the few derived values many wheres share, such as
 * `lower(title)`) are computed from the text once, however many shapes' wheres look at them.
 */
export class RowValues {
  private readonly values: unknown[] = []

  constructor(readonly text: Row) {}

  /** The value in `slot`, computed by `compute` the first time it is asked for. */
  once(slot: number, compute: (row: RowValues) => unknown): unknown {
    let value = this.values[slot]
    if (value === undefined) {
      try {
        value = compute(this)
      } catch (error) {
        if (!(error instanceof WhereRuntimeError)) throw error
        value = new Refused(error)
      }
      this.values[slot] = value
    }
    if (value instanceof Refused) throw value.error
    return value
  }
}
