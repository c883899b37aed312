import type { Row, RowStore } from '../../../../shared/shape-client'
import { LiveSlots } from './live-slots'
import { int32Pages, uint32Pages } from './paged-array'
import { hashOf, TextPool } from './text-pool'

/** What a cell's second number says when it is not a text's length. */
const ABSENT = -1
const NULL = -2
/** The first number is the value (an integer whose text it gives back exactly). */
const INTEGER = -3
/** The first number is the index of the value in the column's dictionary. */
const DICTIONARY = -4

/** Values a column sees before it decides whether a dictionary of its text pays. */
const DICTIONARY_SAMPLE = 4_096
/** Distinct values a column's dictionary holds at most. */
const DICTIONARY_MAX = 65_536
/** Deleted rows or replaced text are squeezed out once they are this many and as many as what is live. */
const COMPACT_AFTER = 4_096

/** `123` → 123 (fits 32 bits); `007`, `-0`, `1.5`, `1e3` stay text (their text must come back exactly). */
function integerOf(text: string): number | null {
  const length = text.length
  if (length === 0 || length > 10) return null
  const start = text.charCodeAt(0) === 45 ? 1 : 0
  if (start === length) return null
  if (text.charCodeAt(start) === 48) return length === 1 ? 0 : null
  for (let at = start; at < length; at += 1) {
    const code = text.charCodeAt(at)
    if (code < 48 || code > 57) return null
  }
  const value = Number(text)
  return value === (value | 0) ? value : null
}

/**
 * One column's cells by slot, as two 32-bit numbers each (no object per cell): a text's offset and length in the
 * column's pool, an integer, an index in its dictionary (few values repeated often: a status, a foreign key), NULL, or
 * absent (the row lacks the column).
 */
class Column {
  private readonly first = uint32Pages()
  private readonly second = int32Pages(ABSENT)
  private readonly pool = new TextPool()
  private dictionary: Map<string, number> | null = new Map()
  private readonly words: string[] = []
  private seen = 0
  /** Characters of the pool no cell points at any more. */
  garbage = 0

  constructor(readonly name: string) {}

  put(slot: number, value: string | null | undefined): void {
    if (slot >= this.second.length) {
      this.first.ensure(slot + 1)
      this.second.ensure(slot + 1)
    }
    const old = this.second.get(slot)
    if (old >= 0) {
      if (typeof value === 'string' && this.pool.equals(this.first.get(slot), old, value)) return
      this.garbage += old
    }
    if (value === undefined) this.second.set(slot, ABSENT)
    else if (value === null) this.second.set(slot, NULL)
    else this.putText(slot, value)
  }

  private putText(slot: number, value: string): void {
    const integer = integerOf(value)
    if (integer !== null) {
      this.first.set(slot, integer)
      this.second.set(slot, INTEGER)
      return
    }
    const word = this.wordOf(value)
    if (word !== null) {
      this.first.set(slot, word)
      this.second.set(slot, DICTIONARY)
      return
    }
    this.first.set(slot, this.pool.add(value))
    this.second.set(slot, value.length)
  }

  private wordOf(value: string): number | null {
    const dictionary = this.dictionary
    if (!dictionary) return null
    const known = dictionary.get(value)
    if (known !== undefined) return known
    this.seen += 1
    // mostly distinct values (titles, timestamps): a dictionary would only add to them
    if (
      dictionary.size >= DICTIONARY_MAX ||
      (this.seen === DICTIONARY_SAMPLE && dictionary.size > DICTIONARY_SAMPLE / 2)
    ) {
      this.dictionary = null
      return null
    }
    dictionary.set(value, this.words.length)
    this.words.push(value)
    return this.words.length - 1
  }

  text(slot: number): string | null | undefined {
    const second = slot < this.second.length ? this.second.get(slot) : ABSENT
    if (second >= 0) return this.pool.read(this.first.get(slot), second)
    if (second === INTEGER) return String(this.first.get(slot) | 0)
    if (second === DICTIONARY) return this.words[this.first.get(slot)]
    return second === NULL ? null : undefined
  }

  get live(): number {
    return this.pool.length - this.garbage
  }
}

/** A row as a table shows it: its key and its cells in `columns()` order (undefined: the row lacks that column). */
export interface StoredRow {
  key: string
  cells: Array<string | null | undefined>
}

/**
 * A shape's rows in columns of numbers and a few large strings instead of one object per row: a million rows are a
 * few hundred MB and almost nothing for the garbage collector to trace. Keys are found through an open-addressing hash
 * table of slots. Rows keep the order a Map would (first insert; an update stays in place).
 */
export class ColumnarRowStore implements RowStore {
  private keyPool = new TextPool()
  private keyOffset = uint32Pages()
  /** A slot's key length; -1 once deleted. */
  private keyLength = int32Pages()
  private keyHash = uint32Pages()
  /** slot + 1 per bucket; 0 empty, -1 a deleted slot's bucket. */
  private table = new Int32Array(1 << 12)
  private used = 0
  private slotCount = 0
  private dead = 0
  private columnList: Column[] = []
  private columnByName = new Map<string, Column>()
  private order = new LiveSlots()
  /** The last key looked up and its slot (-1: absent): a get, a set and a mark of one row hash it once. */
  private lastKey: string | null = null
  private lastSlot = -1
  /** Bumped on every change. */
  version = 0

  get size(): number {
    return this.order.count
  }

  columns(): string[] {
    return this.columnList.map((column) => column.name)
  }

  has(key: string): boolean {
    return this.slotOf(key) !== -1
  }

  get(key: string): Row | undefined {
    const slot = this.slotOf(key)
    return slot === -1 ? undefined : this.rowOf(slot)
  }

  set(key: string, row: Row): void {
    this.version += 1
    let slot = this.slotOf(key)
    if (slot === -1) {
      slot = this.append(key)
    } else {
      for (const column of this.columnList) if (!(column.name in row)) column.put(slot, undefined)
    }
    for (const name in row) this.column(name).put(slot, row[name])
    this.compactIfWorth()
  }

  delete(key: string): boolean {
    const slot = this.slotOf(key)
    if (slot === -1) return false
    this.version += 1
    this.unlink(slot)
    this.keyLength.set(slot, -1)
    for (const column of this.columnList) column.put(slot, undefined)
    this.order.remove(slot)
    this.dead += 1
    this.lastKey = null
    this.compactIfWorth()
    return true
  }

  clear(): void {
    this.version += 1
    this.keyPool = new TextPool()
    this.keyOffset = uint32Pages()
    this.keyLength = int32Pages()
    this.keyHash = uint32Pages()
    this.table = new Int32Array(1 << 12)
    this.used = 0
    this.slotCount = 0
    this.dead = 0
    this.columnList = []
    this.columnByName = new Map()
    this.order = new LiveSlots()
    this.lastKey = null
  }

  /** The n-th row (0-based, in the order above), or null past the end. */
  rowAt(index: number): StoredRow | null {
    if (index < 0 || index >= this.order.count) return null
    const slot = this.order.nth(index)
    return {
      key: this.keyAt(slot),
      cells: this.columnList.map((column) => column.text(slot))
    }
  }

  private keyAt(slot: number): string {
    return this.keyPool.read(this.keyOffset.get(slot), this.keyLength.get(slot))
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

  /** The slot holding `key`, or -1. */
  private slotOf(key: string): number {
    if (key === this.lastKey) return this.lastSlot
    const hash = hashOf(key)
    const mask = this.table.length - 1
    let slot = -1
    for (let bucket = hash & mask; ; bucket = (bucket + 1) & mask) {
      const entry = this.table[bucket] as number
      if (entry === 0) break
      if (entry < 0) continue
      const candidate = entry - 1
      if (
        this.keyHash.get(candidate) === hash &&
        this.keyPool.equals(this.keyOffset.get(candidate), this.keyLength.get(candidate), key)
      ) {
        slot = candidate
        break
      }
    }
    this.lastKey = key
    this.lastSlot = slot
    return slot
  }

  private append(key: string): number {
    const slot = this.slotCount++
    if (slot >= this.keyLength.length) {
      this.keyOffset.ensure(slot + 1)
      this.keyLength.ensure(slot + 1)
      this.keyHash.ensure(slot + 1)
    }
    this.keyOffset.set(slot, this.keyPool.add(key))
    this.keyLength.set(slot, key.length)
    this.keyHash.set(slot, hashOf(key))
    if ((this.used + 1) * 2 > this.table.length) this.rehash(this.table.length * 2)
    this.link(slot)
    this.order.add(slot)
    this.lastKey = key
    this.lastSlot = slot
    return slot
  }

  private link(slot: number): void {
    const mask = this.table.length - 1
    let bucket = this.keyHash.get(slot) & mask
    while ((this.table[bucket] as number) > 0) bucket = (bucket + 1) & mask
    if (this.table[bucket] === 0) this.used += 1
    this.table[bucket] = slot + 1
  }

  private unlink(slot: number): void {
    const mask = this.table.length - 1
    for (let bucket = this.keyHash.get(slot) & mask; ; bucket = (bucket + 1) & mask) {
      if (this.table[bucket] === slot + 1) {
        this.table[bucket] = -1
        return
      }
    }
  }

  private rehash(size: number): void {
    this.table = new Int32Array(size)
    this.used = 0
    for (let slot = 0; slot < this.slotCount; slot += 1) if (this.keyLength.get(slot) >= 0) this.link(slot)
  }

  private compactIfWorth(): void {
    const garbage = this.dead + this.columnList.reduce((sum, column) => sum + column.garbage, 0) / 64
    const live = this.order.count + this.columnList.reduce((sum, column) => sum + column.live, 0) / 64
    if (garbage >= COMPACT_AFTER && garbage >= live) this.compact()
  }

  /** Rewrites the live rows in order: deleted slots and replaced text go. */
  private compact(): void {
    const rows: Array<{ key: string; row: Row }> = []
    const count = this.order.count
    for (let index = 0; index < count; index += 1) {
      const slot = this.order.nth(index)
      rows.push({ key: this.keyAt(slot), row: this.rowOf(slot) })
    }
    const names = this.columns()
    this.clear()
    for (const name of names) this.column(name)
    for (const { key, row } of rows) {
      const slot = this.append(key)
      for (const name in row) this.column(name).put(slot, row[name])
    }
  }
}
