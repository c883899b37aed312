import { createHash } from 'node:crypto'
import type { Row } from '../storage/messages'
import { RowValues } from '../../sql'
import { DEFAULT_MAX_SUBQUERY_ROWS, SubqueryRowsError } from './limits'
import { type Dependency, type SubqueryPlan, type WherePlan, plainHolds } from './plan'
import { setMember } from './set-map'

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

/** Values that entered and left a dependency's result in one transaction (or one move-in). */
export interface DependencyMoves {
  entered: string[]
  left: string[]
}

/**
 * Rows of a nested dependency's table that may have entered its result and are not held: those whose `lhs` holds one
 * of `values` (a subquery their where uses gained them, or a NOT IN one lost them). Only Postgres has them.
 */
export interface Fetch {
  dependency: number
  lhs: string[]
  values: string[]
}

/** What a dependency's query selects: its key, its selected columns and (for a nested one) what its where reads. */
export function dependencyColumns(dependency: Dependency): string[] {
  const { table } = dependency
  const wanted = new Set([
    ...table.keyColumns,
    ...dependency.columns,
    ...(dependency.nested ? dependency.plan.referenced : [])
  ])
  return table.columns.map((column) => column.name).filter((name) => wanted.has(name))
}

/**
 * One subquery's result as of the shape's position in the replication stream: how many included rows hold each value.
 * Only rows in the result are held, nested or not (never the whole table): a nested dependency keeps its rows (the
 * columns its where reads) to judge them again when a subquery it uses moves, indexed by the values they link by.
 */
export class DependencyState {
  readonly counts = new Map<string, number>()
  /** Included rows by key → their value key (rows whose value has a NULL are not counted). */
  private readonly included = new Map<string, string | null>()
  /** A nested dependency's included rows by key; null for one without subqueries of its own. */
  private readonly rows: Map<string, Row> | null
  /** For each sublink position of a nested dependency's where: linking value → keys of included rows holding it. */
  private readonly links = new Map<number, Map<string, Set<string>>>()
  /** Values whose membership changed in the transaction being applied, with whether they were in before it. */
  private touched = new Map<string, boolean>()

  constructor(readonly dependency: Dependency) {
    this.rows = dependency.nested ? new Map() : null
    if (dependency.nested)
      dependency.plan.positions.forEach((position, index) => {
        if (position.kind === 'sublink') this.links.set(index, new Map())
      })
  }

  has(value: string): boolean {
    return this.counts.has(value)
  }

  /** Whether the row of this key is in the result. */
  holds(key: string): boolean {
    return this.included.has(key)
  }

  /** Rows held in memory for this dependency: its result's size. */
  get size(): number {
    return this.included.size
  }

  rowKey(row: Row): string {
    return JSON.stringify(this.dependency.table.keyColumns.map((name) => row[name] ?? null))
  }

  row(key: string): Row | undefined {
    return this.rows?.get(key)
  }

  /** Keys of held rows whose linking columns at `position` hold one of `values`. */
  linked(position: number, values: readonly string[]): string[] {
    const byValue = this.links.get(position)
    return values.flatMap((value) => [...(byValue?.get(value) ?? [])])
  }

  private touch(value: string): void {
    if (!this.touched.has(value)) this.touched.set(value, this.counts.has(value))
  }

  private link(key: string, row: Row, add: boolean): void {
    for (const [index, byValue] of this.links) {
      const position = this.dependency.plan.positions[index]
      const value = position?.kind === 'sublink' ? valueKey(row, position.lhs) : null
      if (value !== null) setMember(byValue, value, key, add)
    }
  }

  remove(key: string): void {
    if (!this.included.has(key)) return
    const value = this.included.get(key) ?? null
    this.included.delete(key)
    const row = this.rows?.get(key)
    if (row) {
      this.rows?.delete(key)
      this.link(key, row, false)
    }
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
    if (this.rows) {
      this.rows.set(key, row)
      this.link(key, row, true)
    }
    if (value === null) return
    this.touch(value)
    this.counts.set(value, (this.counts.get(value) ?? 0) + 1)
  }

  /** The values that entered and left since the last call, toggles within it netted out. */
  takeMoves(): DependencyMoves {
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

  /** `maxRows`: how many rows its dependencies may hold together before SubqueryRowsError. */
  constructor(
    readonly plan: SubqueryPlan,
    private readonly maxRows = DEFAULT_MAX_SUBQUERY_ROWS
  ) {
    this.states = plan.dependencies.map((dependency) => new DependencyState(dependency))
  }

  private checkSize(): void {
    if (this.size > this.maxRows) throw new SubqueryRowsError(this.maxRows)
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

  /** Rows held, all dependencies together. */
  get size(): number {
    return this.states.reduce((sum, state) => sum + state.size, 0)
  }

  included(plan: WherePlan, conditions: readonly boolean[]): boolean {
    return plan.disjuncts.some((conjuncts) => conjuncts.every((index) => conditions[index]))
  }

  /** Loads a dependency's result as of the shape's snapshot (its where evaluated by Postgres, subqueries and all). */
  load(index: number, rows: Iterable<Row>): void {
    const state = this.states[index]
    if (!state) return
    for (const row of rows) state.add(state.rowKey(row), row)
    state.takeMoves()
    this.checkSize()
  }

  /**
   * Applies a transaction's changes to the dependencies, deepest first: each dependency's net moves, and the rows to
   * fetch for nested ones whose subqueries moved so that rows they do not hold may enter.
   */
  apply(
    changes: ReadonlyArray<{ table: string; old: Row | null; new: Row | null }>,
    tableKey: (dependency: Dependency) => string
  ): { moves: DependencyMoves[]; fetches: Fetch[] } {
    const moves: DependencyMoves[] = []
    const fetches: Fetch[] = []
    this.states.forEach((state, index) => {
      const { dependency } = state
      const table = tableKey(dependency)
      for (const change of changes) {
        if (change.table !== table) continue
        if (change.old) state.remove(state.rowKey(change.old))
        if (change.new && this.included(dependency.plan, this.conditions(dependency.plan, change.new)))
          state.add(state.rowKey(change.new), change.new)
      }
      if (dependency.nested) fetches.push(...this.settle(index, moves))
      moves[index] = state.takeMoves()
    })
    this.checkSize()
    return { moves, fetches }
  }

  /**
   * Takes in the rows a move-in read of nested dependencies' tables (`candidates`, by dependency), deepest first: rows
   * not held that are in a result now are added, held rows a subquery's move leaves out are dropped. Returns each
   * dependency's net moves.
   */
  merge(candidates: ReadonlyMap<number, readonly Row[]>): DependencyMoves[] {
    const moves: DependencyMoves[] = []
    this.states.forEach((state, index) => {
      const { dependency } = state
      // the rows it would fetch are among the candidates: they were read for every dependency above a fetched one
      if (dependency.nested) this.settle(index, moves)
      for (const row of candidates.get(index) ?? []) {
        const key = state.rowKey(row)
        if (!state.holds(key) && this.included(dependency.plan, this.conditions(dependency.plan, row)))
          state.add(key, row)
      }
      moves[index] = state.takeMoves()
    })
    this.checkSize()
    return moves
  }

  /**
   * A nested dependency after the subqueries its where uses moved: held rows whose linking value made a position
   * false are judged again; rows with a value that made a position true may enter, and are to be fetched.
   */
  private settle(index: number, moves: readonly DependencyMoves[]): Fetch[] {
    const state = this.states[index] as DependencyState
    const { plan } = state.dependency
    const fetches: Fetch[] = []
    plan.positions.forEach((position, at) => {
      if (position.kind !== 'sublink') return
      const moved = moves[position.dependency]
      if (!moved) return
      for (const key of state.linked(at, position.negated ? moved.entered : moved.left)) {
        const row = state.row(key)
        if (row && !this.included(plan, this.conditions(plan, row))) state.remove(key)
      }
      const values = position.negated ? moved.left : moved.entered
      if (values.length > 0) fetches.push({ dependency: index, lhs: position.lhs, values })
    })
    return fetches
  }
}
