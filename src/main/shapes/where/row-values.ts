import { WhereRuntimeError } from './errors'

/** A row as Postgres prints it (pgoutput and COPY text): column name → text, NULL as null. */
export type Row = Readonly<Record<string, string | null>>

/** An evaluation that Postgres would have refused on this row, remembered so that every where sees the same error. */
class Refused {
  constructor(readonly error: WhereRuntimeError) {}
}

/**
 * One changed row while it is routed: its typed values (and the few derived values many wheres share, such as
 * `lower(title)`) are computed from the text once, however many shapes' wheres look at them.
 */
const slots = new Map<string, number>()
export function slotOf(key: string): number {
  let slot = slots.get(key)
  if (slot === undefined) {
    slot = slots.size
    slots.set(key, slot)
  }
  return slot
}

export class RowValues {
  private readonly values: unknown[] = new Array(slots.size)

  constructor(readonly text: Row) {}

  /** The value named `key`, computed by `compute` the first time; a key always names the same expression. */
  once(key: number, compute: (row: RowValues) => unknown): unknown {
    let value = this.values[key]
    if (value === undefined) {
      try {
        value = compute(this)
      } catch (error) {
        if (!(error instanceof WhereRuntimeError)) throw error
        value = new Refused(error)
      }
      this.values[key] = value
    }
    if (value instanceof Refused) throw value.error
    return value
  }
}
