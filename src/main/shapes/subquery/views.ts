import { createHash } from 'node:crypto'
import type { Row } from '../storage/messages'
import { RowValues } from '../../sql'
import { type Dependency, type SubqueryPlan, type WherePlan, plainHolds } from './plan'

/** Values to judge as in (true) or out (false) of a dependency whatever it holds now: the view before a move. */
export type Overrides = ReadonlyMap<number, ReadonlyMap<string, boolean>>

/** The key of a row's values in `columns`; null when one is NULL (it can never be found by IN). */
export function valueKey(row: Row, columns: readonly string[]): string | null {
  if (columns.length === 1) return row[columns[0] ?? ''] ?? null
  const values = columns.map((name) => row[name] ?? null)
  return values.includes(null) ? null : JSON.stringify(values)
}

/** The values of a key made by valueKey for `count` columns. */
export const keyValues = (key: string, count: number): string[] => (count === 1 ? [key] : (JSON.parse(key) as string[]))

const ns = (value: string | null): string => (value === null ? 'NULL' : `v:${value}`)

/**
 * A tag slot: md5(stack ‖ shape handle ‖ ns(value)), as the reference hashes it; a row test `(a, b) IN …` hashes
 * `a:ns(a)b:ns(b)`. The handle is part of it, so tags change when a shape is rebuilt.
 */
export function slotHash(
  stack: string,
  handle: string,
  lhs: readonly string[],
  values: ReadonlyArray<string | null>
): string {
  const text =
    lhs.length === 1 ? ns(values[0] ?? null) : lhs.map((name, index) => `${name}:${ns(values[index] ?? null)}`).join('')
  return createHash('md5')
    .update(stack + handle + text)
    .digest('hex')
}

/** One subquery's result as of the shape's position in the replication stream: how many included rows hold each value. */
export class DependencyState {
  readonly counts = new Map<string, number>()
  /** Included rows by key → their value key (rows whose value has a NULL are not counted). */
  private readonly included = new Map<string, string | null>()
  /** Dependencies with subqueries of their own keep every row of their table, to judge it again when those move. */
  readonly rows: Map<string, Row> | null
  /** Values whose membership changed in the transaction being applied, with whether they were in before it. */
  private touched = new Map<string, boolean>()

  constructor(readonly dependency: Dependency) {
    this.rows = dependency.nested ? new Map() : null
  }

  has(value: string): boolean {
    return this.counts.has(value)
  }

  rowKey(row: Row): string {
    return JSON.stringify(this.dependency.table.keyColumns.map((name) => row[name] ?? null))
  }

  private touch(value: string): void {
    if (!this.touched.has(value)) this.touched.set(value, this.counts.has(value))
  }

  remove(key: string): void {
    if (!this.included.has(key)) return
    const value = this.included.get(key) ?? null
    this.included.delete(key)
    if (value === null) return
    this.touch(value)
    const count = (this.counts.get(value) ?? 0) - 1
    if (count <= 0) this.counts.delete(value)
    else this.counts.set(value, count)
  }

  add(key: string, row: Row): void {
    this.remove(key)
    const value = valueKey(row, this.dependency.columns)
    this.included.set(key, value)
    if (value === null) return
    this.touch(value)
    this.counts.set(value, (this.counts.get(value) ?? 0) + 1)
  }

  /** The values that entered and left since the last call, toggles within it netted out. */
  takeMoves(): { entered: string[]; left: string[] } {
    const entered: string[] = []
    const left: string[] = []
    for (const [value, before] of this.touched) {
      const now = this.counts.has(value)
      if (now && !before) entered.push(value)
      else if (!now && before) left.push(value)
    }
    this.touched = new Map()
    return { entered, left }
  }
}

/** Every dependency's state for one shape, and how the shape's where and its dependencies' wheres judge rows with them. */
export class Views {
  readonly states: DependencyState[]

  constructor(readonly plan: SubqueryPlan) {
    this.states = plan.dependencies.map((dependency) => new DependencyState(dependency))
  }

  /** Each position's truth for a row, polarity applied. */
  conditions(plan: WherePlan, row: Row, overrides?: Overrides): boolean[] {
    const values = new RowValues(row)
    return plan.positions.map((position) => {
      if (position.kind === 'plain') return plainHolds(position, values)
      const key = valueKey(row, position.lhs)
      const override = key === null ? undefined : overrides?.get(position.dependency)?.get(key)
      const found = key !== null && (override ?? this.states[position.dependency]?.has(key) ?? false)
      return position.negated ? !found : found
    })
  }

  included(plan: WherePlan, conditions: readonly boolean[]): boolean {
    return plan.disjuncts.some((conjuncts) => conjuncts.every((index) => conditions[index]))
  }

  /** Loads a dependency's rows as of the shape's snapshot: included rows only, or every row for a nested one. */
  load(index: number, rows: Iterable<Row>): void {
    const state = this.states[index]
    if (!state) return
    for (const row of rows) {
      const key = state.rowKey(row)
      if (state.rows) {
        state.rows.set(key, row)
        if (this.included(state.dependency.plan, this.conditions(state.dependency.plan, row))) state.add(key, row)
      } else state.add(key, row)
    }
    state.takeMoves()
  }

  /**
   * Applies a transaction's changes to the dependencies, deepest first, and returns each dependency's net moves.
   * A nested dependency judges its rows again when a dependency it uses moved.
   */
  apply(
    changes: ReadonlyArray<{ table: string; old: Row | null; new: Row | null }>,
    tableKey: (dependency: Dependency) => string
  ): Array<{ entered: string[]; left: string[] }> {
    const moves: Array<{ entered: string[]; left: string[] }> = []
    this.states.forEach((state, index) => {
      const { dependency } = state
      const table = tableKey(dependency)
      for (const change of changes) {
        if (change.table !== table) continue
        if (change.old) {
          const key = state.rowKey(change.old)
          state.remove(key)
          state.rows?.delete(key)
        }
        if (change.new) {
          const key = state.rowKey(change.new)
          state.rows?.set(key, change.new)
          if (this.included(dependency.plan, this.conditions(dependency.plan, change.new))) state.add(key, change.new)
        }
      }
      if (state.rows) {
        const usedMoved = dependency.plan.positions.some(
          (position) =>
            position.kind === 'sublink' &&
            ((moves[position.dependency]?.entered.length ?? 0) > 0 ||
              (moves[position.dependency]?.left.length ?? 0) > 0)
        )
        if (usedMoved) {
          for (const [key, row] of state.rows) {
            if (this.included(dependency.plan, this.conditions(dependency.plan, row))) state.add(key, row)
            else state.remove(key)
          }
        }
      }
      moves[index] = state.takeMoves()
    })
    return moves
  }
}
