import type { CompiledWhere } from './compile-where'
import type { Row } from './compile'
import { type EqualityIndexKey, type IndexKeyKind, keyOfText } from './equality'

export interface ShapeRouter<T> {
  /** Registers (or replaces) a shape; `compiled` null means the shape has no where and takes every row. */
  add(id: string, table: string, compiled: CompiledWhere | null, value: T): void
  remove(id: string): void
  /** Values of the shapes on `table` whose where matches the row. */
  route(table: string, row: Row): T[]
  readonly size: number
}

interface Entry<T> {
  id: string
  table: string
  compiled: CompiledWhere | null
  value: T
  index: { slot: string; keys: readonly string[] } | undefined
}

interface IndexSlot<T> {
  column: string
  kind: IndexKeyKind
  byKey: Map<string, Map<string, Entry<T>>>
  /** How many shapes use this slot, so empty slots are dropped and route() never scans them. */
  shapes: number
}

interface TableIndex<T> {
  slots: Map<string, IndexSlot<T>>
  /** Shapes with no indexable equality: evaluated one by one. */
  fallback: Map<string, Entry<T>>
}

/** The most selective conjunct: the one with the fewest keys. */
function pickEquality(equalities: readonly EqualityIndexKey[] | null | undefined): EqualityIndexKey | undefined {
  let best: EqualityIndexKey | undefined
  for (const equality of equalities ?? []) if (!best || equality.keys.length < best.keys.length) best = equality
  return best
}

/**
 * Routes changed rows to shapes. Per table, shapes with an equality conjunct (`col = c`, `col IN (…)`,
 * `col = ANY('{…}')`, and ANDs of them) are found through hash maps keyed by the normalised column value;
 * only those candidates and the fallback shapes are evaluated.
 */
export function createShapeRouter<T>(): ShapeRouter<T> {
  const entries = new Map<string, Entry<T>>()
  const tables = new Map<string, TableIndex<T>>()

  function tableIndex(table: string): TableIndex<T> {
    let index = tables.get(table)
    if (!index) {
      index = { slots: new Map(), fallback: new Map() }
      tables.set(table, index)
    }
    return index
  }

  function remove(id: string): void {
    const entry = entries.get(id)
    if (!entry) return
    entries.delete(id)
    const index = tables.get(entry.table)
    if (!index) return
    if (entry.index) {
      const slot = index.slots.get(entry.index.slot)
      if (slot) {
        for (const key of entry.index.keys) {
          const bucket = slot.byKey.get(key)
          bucket?.delete(id)
          if (bucket?.size === 0) slot.byKey.delete(key)
        }
        slot.shapes -= 1
        if (slot.shapes === 0) index.slots.delete(entry.index.slot)
      }
    } else {
      index.fallback.delete(id)
    }
    if (index.slots.size === 0 && index.fallback.size === 0) tables.delete(entry.table)
  }

  function add(id: string, table: string, compiled: CompiledWhere | null, value: T): void {
    remove(id)
    const equality = pickEquality(compiled?.equalities)
    const slotName = equality ? `${equality.kind}\u0000${equality.column}` : undefined
    const entry: Entry<T> = { id, table, compiled, value, index: equality && slotName ? { slot: slotName, keys: [...new Set(equality.keys)] } : undefined }
    entries.set(id, entry)
    const index = tableIndex(table)
    if (!equality || !slotName || !entry.index) {
      index.fallback.set(id, entry)
      return
    }
    let slot = index.slots.get(slotName)
    if (!slot) {
      slot = { column: equality.column, kind: equality.kind, byKey: new Map(), shapes: 0 }
      index.slots.set(slotName, slot)
    }
    slot.shapes += 1
    for (const key of entry.index.keys) {
      let bucket = slot.byKey.get(key)
      if (!bucket) {
        bucket = new Map()
        slot.byKey.set(key, bucket)
      }
      bucket.set(id, entry)
    }
  }

  function route(table: string, row: Row): T[] {
    const index = tables.get(table)
    if (!index) return []
    const matched: T[] = []
    const test = (entry: Entry<T>): void => {
      if (!entry.compiled || entry.compiled.matches(row)) matched.push(entry.value)
    }
    for (const slot of index.slots.values()) {
      const key = keyOfText(slot.kind, Object.hasOwn(row, slot.column) ? row[slot.column] : null)
      const bucket = key === null ? undefined : slot.byKey.get(key)
      if (bucket) for (const entry of bucket.values()) test(entry)
    }
    for (const entry of index.fallback.values()) test(entry)
    return matched
  }

  return {
    add,
    remove,
    route,
    get size() {
      return entries.size
    }
  }
}
