import type { CompiledWhere } from './compile-where'
import { ValueIndex } from './probe-index'
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
  /**
   * routeChange in steps, for a caller that lets the event loop run between shapes: the shapes a probe admits are
   * found at once, and each `judge` evaluates shapes until they are all done (true) or `due()` says the time is up.
   */
  startChange(table: string, old: Row | null, next: Row | null): ChangeRoute<T>
  readonly size: number
}

export interface ChangeRoute<T> {
  judge(due: () => boolean): boolean
  /** The shapes judged so far that the row concerns, in the order routeChange returns them. */
  readonly routed: Array<Routed<T>>
}

interface Entry<T> {
  id: string
  table: string
  compiled: CompiledWhere | null
  value: T
  /** Takes the shape's probes out of the value indexes; null for a shape evaluated on every row. */
  unregister: (() => void) | null
  /** The routing pass in which a probe admitted the old / new version of the row. */
  oldPass: number
  newPass: number
}

interface TableIndex<T> {
  /** Probes of the shapes on the table, by the value of the row they test. */
  values: Map<string, ValueIndex<Entry<T>>>
  /** Shapes without probes (no where, or one no index can check): evaluated on every row. */
  fallback: Map<string, Entry<T>>
  /** The fallback shapes as an array, for the per-row loop; rebuilt after a change. */
  fallbackList: Array<Entry<T>> | null
}

const CHECK_OLD = 1
const CHECK_NEW = 2
const CHECK_BOTH = CHECK_OLD | CHECK_NEW

/**
 * One changed row on its way through the router: both versions' values, read once, the shapes to evaluate with the
 * versions each may match (what its probes admitted, fixed when found: the router may route other rows meanwhile),
 * and the shapes found so far.
 */
class ChangeRouting<T> implements ChangeRoute<T> {
  readonly before: RowValues | null
  readonly after: RowValues | null
  /** Columns whose text the change altered; null unless both versions are known. */
  private readonly changed: Set<string> | null
  readonly routed: Array<Routed<T>> = []
  private readonly pending: Array<Entry<T>> = []
  private readonly checks: number[] = []
  private next = 0

  constructor(oldRow: Row | null, newRow: Row | null) {
    this.before = oldRow && new RowValues(oldRow)
    this.after = newRow && new RowValues(newRow)
    this.changed = oldRow && newRow ? changedColumns(oldRow, newRow) : null
  }

  add(entry: Entry<T>, checks: number): void {
    this.pending.push(entry)
    this.checks.push(checks)
  }

  judge(due: () => boolean): boolean {
    const { pending, checks } = this
    while (this.next < pending.length) {
      const at = this.next++
      const checked = checks[at] as number
      this.evaluate(pending[at] as Entry<T>, (checked & CHECK_OLD) !== 0, (checked & CHECK_NEW) !== 0)
      if (this.next < pending.length && due()) return false
    }
    return true
  }

  /** Evaluates a shape on the versions it may match (its probes may already rule one out). */
  private evaluate(entry: Entry<T>, checkOld: boolean, checkNew: boolean): void {
    const compiled = entry.compiled
    const matchesNew = checkNew && this.after !== null && (!compiled || compiled.matchesValues(this.after))
    const matchesOld =
      checkOld &&
      this.before !== null &&
      (checkNew && this.unchangedFor(compiled) ? matchesNew : !compiled || compiled.matchesValues(this.before))
    if (matchesOld || matchesNew) this.routed.push({ value: entry.value, old: matchesOld, new: matchesNew })
  }

  /** The change altered no column the where reads, so both versions match it alike. */
  private unchangedFor(compiled: CompiledWhere | null): boolean {
    if (!compiled || !this.changed) return false
    for (const column of compiled.referencedColumns) if (this.changed.has(column)) return false
    return true
  }
}

const never = (): boolean => false

/** Columns whose text differs between two versions of a row (a column missing from one counts as changed). */
function changedColumns(old: Row, next: Row): Set<string> {
  const changed = new Set<string>()
  for (const name of Object.keys(next)) if (!Object.hasOwn(old, name) || old[name] !== next[name]) changed.add(name)
  for (const name of Object.keys(old)) if (!Object.hasOwn(next, name)) changed.add(name)
  return changed
}

/**
 * Routes changed rows to shapes. Per table, each where's probes (see probes.ts: keys of `col = c` / `IN` / `ANY`,
 * ranges, LIKE literals, IS NULL, also of expressions such as `lower(title)` or `owner % 10`) sit in indexes by the
 * value of the row they test; a row reads each such value once, and only the shapes whose probe it passes, plus the
 * shapes no index can check, are evaluated.
 */
export function createShapeRouter<T>(): ShapeRouter<T> {
  const entries = new Map<string, Entry<T>>()
  const tables = new Map<string, TableIndex<T>>()
  let pass = 0

  function tableIndex(table: string): TableIndex<T> {
    let index = tables.get(table)
    if (!index) {
      index = { values: new Map(), fallback: new Map(), fallbackList: null }
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
    if (entry.unregister) entry.unregister()
    else {
      index.fallback.delete(id)
      index.fallbackList = null
    }
    if (index.values.size === 0 && index.fallback.size === 0) tables.delete(entry.table)
  }

  function register(index: TableIndex<T>, entry: Entry<T>, probes: NonNullable<CompiledWhere['probes']>): () => void {
    const undo = probes.map((probe) => {
      let values = index.values.get(probe.value.key)
      if (!values) {
        values = new ValueIndex<Entry<T>>(probe.value)
        index.values.set(probe.value.key, values)
      }
      const owner = values
      const take = owner.add(probe, entry)
      return () => {
        take()
        if (owner.size === 0) index.values.delete(probe.value.key)
      }
    })
    return () => undo.forEach((step) => step())
  }

  function add(id: string, table: string, compiled: CompiledWhere | null, value: T): void {
    remove(id)
    const entry: Entry<T> = { id, table, compiled, value, unregister: null, oldPass: 0, newPass: 0 }
    entries.set(id, entry)
    const index = tableIndex(table)
    if (compiled?.probes) entry.unregister = register(index, entry, compiled.probes)
    else {
      index.fallback.set(id, entry)
      index.fallbackList = null
    }
  }

  function startChange(table: string, oldRow: Row | null, newRow: Row | null): ChangeRoute<T> {
    const change = new ChangeRouting<T>(oldRow, newRow)
    const index = tables.get(table)
    if (!index) return change
    const current = ++pass
    const candidates: Array<Entry<T>> = []
    const admitOld = (entry: Entry<T>): void => {
      if (entry.oldPass === current) return
      if (entry.newPass !== current) candidates.push(entry)
      entry.oldPass = current
    }
    const admitNew = (entry: Entry<T>): void => {
      if (entry.newPass === current) return
      if (entry.oldPass !== current) candidates.push(entry)
      entry.newPass = current
    }
    for (const values of index.values.values()) {
      if (change.before) values.collect(change.before, admitOld)
      if (change.after) values.collect(change.after, admitNew)
    }
    for (const entry of candidates)
      change.add(entry, (entry.oldPass === current ? CHECK_OLD : 0) | (entry.newPass === current ? CHECK_NEW : 0))
    index.fallbackList ??= [...index.fallback.values()]
    for (const entry of index.fallbackList) change.add(entry, CHECK_BOTH)
    return change
  }

  function routeChange(table: string, oldRow: Row | null, newRow: Row | null): Array<Routed<T>> {
    const change = startChange(table, oldRow, newRow)
    change.judge(never)
    return change.routed
  }

  return {
    add,
    remove,
    route: (table, row) => routeChange(table, null, row).map((routed) => routed.value),
    routeChange,
    startChange,
    get size() {
      return entries.size
    }
  }
}
