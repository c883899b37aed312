import type { Row, RowStore } from '../../../../shared/shape-client'

/** A cell as stored: canonical integer text as a number, other text (interned while that pays), NULL, or absent. */
type Cell = string | number | null | undefined

/** Values a column sees before it decides whether interning its text pays. */
const INTERN_SAMPLE = 4_096
/** Distinct values a column interns at most. */
const INTERN_MAX = 65_536
/** Deleted slots are squeezed out once they are this many and half of all slots. */
const COMPACT_AFTER = 4_096

/** `123` → 123; `007`, `-0`, `1.5`, `1e3` and anything past 15 digits stay text (their text must come back exactly). */
function integerOf(text: string): number | null {
  const length = text.length
  if (length === 0 || length > 15) return null
  const start = text.charCodeAt(0) === 45 ? 1 : 0
  if (start === length) return null
  if (text.charCodeAt(start) === 48) return length === 1 ? 0 : null
  for (let at = start; at < length; at += 1) {
    const code = text.charCodeAt(at)
    if (code < 48 || code > 57) return null
  }
  return Number(text)
}

/** One column's cells by slot. Repeated text (a status, a foreign key) is stored once while few values repeat often. */
class Column {
  cells: Cell[] = []
  private dictionary: Map<string, string> | null = new Map()
  private seen = 0

  constructor(readonly name: string) {}

  put(slot: number, value: string | null | undefined): void {
    this.cells[slot] = value === null || value === undefined ? value : this.compact(value)
  }

  text(slot: number): string | null | undefined {
    const cell = this.cells[slot]
    return typeof cell === 'number' ? String(cell) : cell
  }

  private compact(value: string): string | number {
    const integer = integerOf(value)
    if (integer !== null) return integer
    const dictionary = this.dictionary
    if (!dictionary) return value
    const known = dictionary.get(value)
    if (known !== undefined) return known
    this.seen += 1
    // mostly distinct values (titles, timestamps): the dictionary would only add to them
    if (dictionary.size >= INTERN_MAX || (this.seen === INTERN_SAMPLE && dictionary.size > INTERN_SAMPLE / 2)) {
      this.dictionary = null
      return value
    }
    dictionary.set(value, value)
    return value
  }
}

/**
 * Which slots hold a row, in slot order, as a Fenwick tree: the n-th row (what a scrolled table asks for) is found in
 * O(log n) however many rows were deleted in between.
 */
class LiveSlots {
  private tree = new Int32Array(1_025)
  private live = new Uint8Array(1_024)
  count = 0

  get capacity(): number {
    return this.live.length
  }

  add(slot: number): void {
    if (slot >= this.capacity) this.grow(slot + 1)
    this.live[slot] = 1
    this.count += 1
    this.change(slot, 1)
  }

  remove(slot: number): void {
    if (this.live[slot] !== 1) return
    this.live[slot] = 0
    this.count -= 1
    this.change(slot, -1)
  }

  /** The slot of the n-th (0-based) live row. */
  nth(n: number): number {
    let position = 0
    let rest = n
    for (let step = this.capacity; step > 0; step >>= 1) {
      const next = position + step
      if (next <= this.capacity && (this.tree[next] as number) <= rest) {
        position = next
        rest -= this.tree[next] as number
      }
    }
    return position
  }

  private change(slot: number, delta: number): void {
    for (let index = slot + 1; index <= this.capacity; index += index & -index)
      this.tree[index] = (this.tree[index] as number) + delta
  }

  private grow(needed: number): void {
    let capacity = this.capacity
    while (capacity < needed) capacity *= 2
    const live = new Uint8Array(capacity)
    live.set(this.live)
    this.live = live
    this.tree = new Int32Array(capacity + 1)
    for (let index = 1; index <= capacity; index += 1) {
      this.tree[index] = (this.tree[index] as number) + (live[index - 1] as number)
      const parent = index + (index & -index)
      if (parent <= capacity) this.tree[parent] = (this.tree[parent] as number) + (this.tree[index] as number)
    }
  }
}

export type MarkKind = 'insert' | 'update'
const MARK_KINDS: Array<MarkKind | null> = [null, 'insert', 'update']

/** A row as a table shows it: its key and its cells in `columns()` order (undefined: the row lacks that column). */
export interface StoredRow {
  key: string
  cells: Array<string | null | undefined>
  mark: { kind: MarkKind; at: number } | null
}

/**
 * A shape's rows in columns (one array per column, indexed by slot) instead of one object per row: a million rows of
 * a few columns take a few hundred bytes each. Rows keep the order a Map would (first insert; an update stays in
 * place). Each row also carries its last change (kind and time), which the table flashes.
 */
export class ColumnarRowStore implements RowStore {
  private slots = new Map<string, number>()
  private keys: Array<string | undefined> = []
  private columnList: Column[] = []
  private columnByName = new Map<string, Column>()
  private order = new LiveSlots()
  private markAt = new Float64Array(0)
  private markKind = new Uint8Array(0)
  private dead = 0
  /** Bumped on every change. */
  version = 0

  get size(): number {
    return this.order.count
  }

  columns(): string[] {
    return this.columnList.map((column) => column.name)
  }

  has(key: string): boolean {
    return this.slots.has(key)
  }

  get(key: string): Row | undefined {
    const slot = this.slots.get(key)
    return slot === undefined ? undefined : this.rowOf(slot)
  }

  set(key: string, row: Row): void {
    this.version += 1
    let slot = this.slots.get(key)
    if (slot === undefined) {
      slot = this.keys.length
      this.keys.push(key)
      this.slots.set(key, slot)
      this.order.add(slot)
    } else {
      for (const column of this.columnList) column.put(slot, undefined)
    }
    for (const name in row) this.column(name).put(slot, row[name])
  }

  delete(key: string): boolean {
    const slot = this.slots.get(key)
    if (slot === undefined) return false
    this.version += 1
    this.slots.delete(key)
    this.keys[slot] = undefined
    for (const column of this.columnList) column.put(slot, undefined)
    if (slot < this.markKind.length) this.markKind[slot] = 0
    this.order.remove(slot)
    this.dead += 1
    if (this.dead >= COMPACT_AFTER && this.dead * 2 >= this.keys.length) this.compact()
    return true
  }

  clear(): void {
    this.version += 1
    this.slots = new Map()
    this.keys = []
    this.columnList = []
    this.columnByName = new Map()
    this.order = new LiveSlots()
    this.markAt = new Float64Array(0)
    this.markKind = new Uint8Array(0)
    this.dead = 0
  }

  /** Notes a row's change, for the flash: `at` in milliseconds since the epoch. */
  mark(key: string, kind: MarkKind, at: number): void {
    const slot = this.slots.get(key)
    if (slot === undefined) return
    if (slot >= this.markKind.length) this.growMarks(slot + 1)
    this.markKind[slot] = kind === 'insert' ? 1 : 2
    this.markAt[slot] = at
  }

  markOf(key: string): StoredRow['mark'] {
    const slot = this.slots.get(key)
    return slot === undefined ? null : this.markIn(slot)
  }

  /** The n-th row (0-based, in the order above), or null past the end. */
  rowAt(index: number): StoredRow | null {
    if (index < 0 || index >= this.order.count) return null
    const slot = this.order.nth(index)
    return {
      key: this.keys[slot] as string,
      cells: this.columnList.map((column) => column.text(slot)),
      mark: this.markIn(slot)
    }
  }

  private markIn(slot: number): StoredRow['mark'] {
    const kind = slot < this.markKind.length ? MARK_KINDS[this.markKind[slot] as number] : null
    return kind ? { kind, at: this.markAt[slot] as number } : null
  }

  private rowOf(slot: number): Row {
    const row: Row = {}
    for (const column of this.columnList) {
      const text = column.text(slot)
      if (text !== undefined) row[column.name] = text
    }
    return row
  }

  private column(name: string): Column {
    let column = this.columnByName.get(name)
    if (!column) {
      column = new Column(name)
      this.columnByName.set(name, column)
      this.columnList.push(column)
    }
    return column
  }

  private growMarks(needed: number): void {
    const capacity = Math.max(needed, this.markKind.length * 2, 1_024)
    const at = new Float64Array(capacity)
    at.set(this.markAt)
    const kind = new Uint8Array(capacity)
    kind.set(this.markKind)
    this.markAt = at
    this.markKind = kind
  }

  /** Squeezes deleted slots out, keeping the rows' order. */
  private compact(): void {
    const keys: string[] = []
    const cells = this.columnList.map(() => [] as Cell[])
    const markAt = new Float64Array(this.order.count)
    const markKind = new Uint8Array(this.order.count)
    const order = new LiveSlots()
    this.keys.forEach((key, slot) => {
      if (key === undefined) return
      const next = keys.length
      keys.push(key)
      this.slots.set(key, next)
      this.columnList.forEach((column, index) => ((cells[index] as Cell[])[next] = column.cells[slot]))
      if (slot < this.markKind.length) {
        markKind[next] = this.markKind[slot] as number
        markAt[next] = this.markAt[slot] as number
      }
      order.add(next)
    })
    this.columnList.forEach((column, index) => (column.cells = cells[index] as Cell[]))
    this.keys = keys
    this.order = order
    this.markAt = markAt
    this.markKind = markKind
    this.dead = 0
  }
}
