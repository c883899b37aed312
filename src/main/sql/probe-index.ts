import { WhereRuntimeError } from './errors'
import { type Probe, type ProbeValue, keyOf, orderNumber } from './probes'
import { type RowValues } from './row-values'

type Visit<E> = (entry: E) => void

interface Interval<E> {
  low: number
  high: number
  entry: E
}

/** The index of the last element of `sorted` for which `atOrBefore` holds (sorted so that it holds on a prefix), + 1. */
function prefixLength<T>(sorted: readonly T[], atOrBefore: (item: T) => boolean): number {
  let [from, to] = [0, sorted.length]
  while (from < to) {
    const middle = (from + to) >>> 1
    if (atOrBefore(sorted[middle] as T)) from = middle + 1
    else to = middle
  }
  return from
}

/**
 * Intervals stabbed by a number. Open-ended intervals sit in two sorted lists (a prefix of each is stabbed); bounded
 * ones are grouped by width class (under 2^k) and sorted by their low end, so that only those starting a little below
 * the number (2^(k+1): room for rounding) are looked at.
 */
class IntervalSet<E> {
  private readonly intervals = new Set<Interval<E>>()
  private sorted: {
    atLeast: Array<Interval<E>>
    atMost: Array<Interval<E>>
    bounded: Array<{ width: number; byLow: Array<Interval<E>> }>
  } | null = null

  add(interval: Interval<E>): void {
    this.intervals.add(interval)
    this.sorted = null
  }

  delete(interval: Interval<E>): void {
    this.intervals.delete(interval)
    this.sorted = null
  }

  get size(): number {
    return this.intervals.size
  }

  stab(point: number, visit: Visit<E>): void {
    const { atLeast, atMost, bounded } = (this.sorted ??= this.sort())
    const below = prefixLength(atLeast, (interval) => interval.low <= point)
    for (let i = 0; i < below; i++) visit((atLeast[i] as Interval<E>).entry)
    const above = prefixLength(atMost, (interval) => interval.high >= point)
    for (let i = 0; i < above; i++) visit((atMost[i] as Interval<E>).entry)
    for (const { width, byLow } of bounded) {
      for (let i = prefixLength(byLow, (interval) => interval.low < point - 2 * width); i < byLow.length; i++) {
        const interval = byLow[i] as Interval<E>
        if (interval.low > point) break
        if (interval.high >= point) visit(interval.entry)
      }
    }
  }

  private sort(): NonNullable<IntervalSet<E>['sorted']> {
    const atLeast: Array<Interval<E>> = []
    const atMost: Array<Interval<E>> = []
    const byClass = new Map<number, Array<Interval<E>>>()
    for (const interval of this.intervals) {
      if (interval.high === Infinity) atLeast.push(interval)
      else if (interval.low === -Infinity) atMost.push(interval)
      else if (interval.low <= interval.high) {
        const widthClass = Math.max(0, Math.ceil(Math.log2(interval.high - interval.low + 1)))
        const members = byClass.get(widthClass) ?? []
        members.push(interval)
        byClass.set(widthClass, members)
      }
    }
    atLeast.sort((a, b) => a.low - b.low)
    atMost.sort((a, b) => b.high - a.high)
    const bounded = [...byClass].map(([widthClass, byLow]) => ({
      width: 2 ** widthClass,
      byLow: byLow.sort((a, b) => a.low - b.low)
    }))
    return { atLeast, atMost, bounded }
  }
}

/** Aho–Corasick over UTF-16 code units: every literal that occurs in a text, in one pass over the text. */
class LiteralAutomaton<E> {
  private readonly next: Array<Map<number, number>> = [new Map()]
  private readonly fallback: number[] = [0]
  private readonly found: Array<Array<ReadonlySet<E>>> = [[]]

  constructor(literals: ReadonlyMap<string, ReadonlySet<E>>) {
    for (const [literal, entries] of literals) {
      let state = 0
      for (let i = 0; i < literal.length; i++) state = this.child(state, literal.charCodeAt(i))
      this.found[state]?.push(entries)
    }
    const queue = [...(this.next[0]?.values() ?? [])]
    for (let at = 0; at < queue.length; at++) {
      const state = queue[at] as number
      for (const [code, child] of this.next[state] ?? []) {
        this.fallback[child] = this.step(this.fallback[state] ?? 0, code)
        this.found[child]?.push(...(this.found[this.fallback[child] ?? 0] ?? []))
        queue.push(child)
      }
    }
  }

  find(text: string, visit: Visit<E>): void {
    let state = 0
    for (let i = 0; i < text.length; i++) {
      state = this.step(state, text.charCodeAt(i))
      for (const entries of this.found[state] as Array<ReadonlySet<E>>) for (const entry of entries) visit(entry)
    }
  }

  private step(from: number, code: number): number {
    let state = from
    for (;;) {
      const next = this.next[state]?.get(code)
      if (next !== undefined) return next
      if (state === 0) return 0
      state = this.fallback[state] ?? 0
    }
  }

  private child(state: number, code: number): number {
    const children = this.next[state] as Map<number, number>
    let child = children.get(code)
    if (child === undefined) {
      child = this.next.length
      children.set(code, child)
      this.next.push(new Map())
      this.fallback.push(0)
      this.found.push([])
    }
    return child
  }
}

/** Below this many literals, each is searched for on its own; from it on, one automaton finds them all. */
const AUTOMATON_FROM = 8

/** Texts and the literals they contain. */
class LiteralSet<E> {
  private readonly literals = new Map<string, Set<E>>()
  private automaton: LiteralAutomaton<E> | null = null

  add(literal: string, entry: E): void {
    const entries = this.literals.get(literal) ?? new Set()
    entries.add(entry)
    this.literals.set(literal, entries)
    this.automaton = null
  }

  delete(literal: string, entry: E): void {
    const entries = this.literals.get(literal)
    entries?.delete(entry)
    if (entries?.size === 0) this.literals.delete(literal)
    this.automaton = null
  }

  find(text: string, visit: Visit<E>): void {
    if (this.literals.size < AUTOMATON_FROM) {
      for (const [literal, entries] of this.literals)
        if (text.includes(literal)) for (const entry of entries) visit(entry)
      return
    }
    ;(this.automaton ??= new LiteralAutomaton(this.literals)).find(text, visit)
  }
}

/**
 * The probes of many wheres on one value of the row, e.g. `priority` or `lower(title)`: the value is read once per
 * row, and the wheres whose probe it passes are found through hash keys, intervals and a literal automaton.
 */
export class ValueIndex<E> {
  private readonly byKey = new Map<string, Set<E>>()
  private readonly nulls = new Set<E>()
  private readonly intervals = new IntervalSet<E>()
  private readonly literals = new LiteralSet<E>()
  /** Every entry with the number of its probes here: a value that cannot be read admits them all. */
  private readonly entries = new Map<E, number>()

  constructor(readonly value: ProbeValue) {}

  get size(): number {
    return this.entries.size
  }

  /** Registers the probe; returns how to take it back. */
  add(probe: Probe, entry: E): () => void {
    this.entries.set(entry, (this.entries.get(entry) ?? 0) + 1)
    const undo = this.register(probe, entry)
    return () => {
      undo()
      const count = (this.entries.get(entry) ?? 1) - 1
      if (count === 0) this.entries.delete(entry)
      else this.entries.set(entry, count)
    }
  }

  /** Visits the entries with a probe that the row passes (some more than once). */
  collect(row: RowValues, visit: Visit<E>): void {
    let value: unknown
    try {
      value = this.value.read(row)
    } catch (error) {
      if (!(error instanceof WhereRuntimeError)) throw error
      for (const entry of this.entries.keys()) visit(entry)
      return
    }
    if (value === null) {
      for (const entry of this.nulls) visit(entry)
      return
    }
    const type = this.value.type
    if (this.byKey.size > 0) for (const entry of this.byKey.get(keyOf(type, value)) ?? []) visit(entry)
    if (this.intervals.size > 0) this.intervals.stab(orderNumber(type, value), visit)
    this.literals.find(value as string, visit)
  }

  private register(probe: Probe, entry: E): () => void {
    switch (probe.kind) {
      case 'keys': {
        const keys = [...new Set(probe.keys)]
        for (const key of keys) {
          const bucket = this.byKey.get(key) ?? new Set()
          bucket.add(entry)
          this.byKey.set(key, bucket)
        }
        return () => {
          for (const key of keys) {
            const bucket = this.byKey.get(key)
            bucket?.delete(entry)
            if (bucket?.size === 0) this.byKey.delete(key)
          }
        }
      }
      case 'range': {
        const interval = { low: probe.low, high: probe.high, entry }
        this.intervals.add(interval)
        return () => this.intervals.delete(interval)
      }
      case 'contains':
        this.literals.add(probe.literal, entry)
        return () => this.literals.delete(probe.literal, entry)
      case 'null':
        this.nulls.add(entry)
        return () => this.nulls.delete(entry)
    }
  }
}
