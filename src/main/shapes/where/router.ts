import type { CompiledWhere } from './compile-where'
import { type EqualityIndexKey, type IndexKeyKind, keyOfText } from './equality'
import { type Row, RowValues } from './row-values'

/** A shape a changed row concerns: whether its where matches the row before and after the change. */
export interface Routed<T> {
  value: T
  old: boolean
  new: boolean
}

export interface ShapeRouter<T> {
  /** Registers (or replaces) a shape; `compiled` null means the shape has no where and takes every row. */
  add(id: string, table: string, compiled: CompiledWhere | null, value: T): void
  remove(id: string): void
  /** Values of the shapes on `table` whose where matches the row. */
  route(table: string, row: Row): T[]
  /**
   * The shapes on `table` whose where matches the old or the new version of a changed row (null: an insert has no old,
   * a delete no new row). Each version's values are read once for all shapes; a shape whose where reads no column
   * the change altered is evaluated once.
   */
  routeChange(table: string, old: Row | null, next: Row | null): Array<Routed<T>>
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
  /** The fallback shapes as an array, for the per-row loop; rebuilt after a change. */
  fallbackList: Array<Entry<T>> | null
}

/** One changed row on its way through the router: both versions' values, read once, and the shapes found so far. */
class ChangeRouting<T> {
  readonly before: RowValues | null
  readonly after: RowValues | null
  /** Columns whose text the change altered; null unless both versions are known. */
  private readonly changed: Set<string> | null
  readonly routed: Array<Routed<T>> = []

  constructor(oldRow: Row | null, newRow: Row | null) {
    this.before = oldRow && new RowValues(oldRow)
    this.after = newRow && new RowValues(newRow)
    this.changed = oldRow && newRow ? changedColumns(oldRow, newRow) : null
  }

  /** Evaluates a shape on the versions it may match (an index may already rule one out). */
  judge(entry: Entry<T>, checkOld: boolean, checkNew: boolean): void {
    const compiled = entry.compiled
    const matchesNew = checkNew && this.after !== null && (!compiled || compiled.matchesValues(this.after))
    const matchesOld = checkOld && this.before !== null && (checkNew && this.unchangedFor(compiled) ? matchesNew : !compiled || compiled.matchesValues(this.before))
    if (matchesOld || matchesNew) this.routed.push({ value: entry.value, old: matchesOld, new: matchesNew })
  }

  /** The change altered no column the where reads, so both versions match it alike. */
  private unchangedFor(compiled: CompiledWhere | null): boolean {
    if (!compiled || !this.changed) return false
    for (const column of compiled.referencedColumns) if (this.changed.has(column)) return false
    return true
  }
}

/** Columns whose text differs between two versions of a row (a column missing from one counts as changed). */
function changedColumns(old: Row, next: Row): Set<string> {
  const changed = new Set<string>()
  for (const name of Object.keys(next)) if (!Object.hasOwn(old, name) || old[name] !== next[name]) changed.add(name)
  for (const name of Object.keys(old)) if (!Object.hasOwn(next, name)) changed.add(name)
  return changed
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
      index = { slots: new Map(), fallback: new Map(), fallbackList: null }
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
      index.fallbackList = null
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
      index.fallbackList = null
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

  function bucketOf(slot: IndexSlot<T>, row: RowValues | null): Map<string, Entry<T>> | undefined {
    if (!row) return undefined
    const key = keyOfText(slot.kind, Object.hasOwn(row.text, slot.column) ? row.text[slot.column] : null)
    return key === null ? undefined : slot.byKey.get(key)
  }

  function routeChange(table: string, oldRow: Row | null, newRow: Row | null): Array<Routed<T>> {
    const index = tables.get(table)
    if (!index) return []
    const change = new ChangeRouting<T>(oldRow, newRow)
    for (const slot of index.slots.values()) {
      const oldBucket = bucketOf(slot, change.before)
      const newBucket = bucketOf(slot, change.after)
      for (const entry of oldBucket?.values() ?? []) change.judge(entry, true, newBucket?.has(entry.id) ?? false)
      for (const entry of newBucket?.values() ?? []) if (!oldBucket?.has(entry.id)) change.judge(entry, false, true)
    }
    index.fallbackList ??= [...index.fallback.values()]
    for (const entry of index.fallbackList) change.judge(entry, true, true)
    return change.routed
  }

  return {
    add,
    remove,
    route: (table, row) => routeChange(table, null, row).map((routed) => routed.value),
    routeChange,
    get size() {
      return entries.size
    }
  }
}
