import type { Alternatives, RowValues } from '../../sql'
import type { TableInfo } from './table-info'

/*
 * The definition's filter beyond a plain where: a where with `IN (SELECT …)`, compiled by a stage above that plugs in
 * (subquery/plan.ts's compileSubqueryWhere, given to the Catalog). The definition knows the plan's form, not how it is
 * made or followed.
 */

/**
 * A where with `IN (SELECT …)` in disjunctive normal form, as the reference's DnfPlan: `positions` are its atoms
 * (a sublink test with its polarity, or a subquery-free condition), `disjuncts` lists the positions each OR arm ANDs.
 */
export interface WherePlan {
  positions: Position[]
  disjuncts: number[][]
  /** The where as Postgres runs it, with real subqueries (NOT IN as `NOT coalesce(… IN …, false)`). */
  sql: string
  /** Columns of the plan's own table that its atoms read. */
  referenced: string[]
}

export type Position =
  /** `probes`: what an index can check of every row the atom holds for (see where/probes.ts), or null. */
  | { kind: 'plain'; sql: string; evaluate: (row: RowValues) => unknown; probes: Alternatives | null }
  | { kind: 'sublink'; sql: string; lhs: string[]; negated: boolean; dependency: number }

/** One distinct subquery: its table, the columns it selects, and its own where (which may nest further subqueries). */
export interface Dependency {
  table: TableInfo
  columns: string[]
  plan: WherePlan
  /** Whether its where has subqueries of its own: then its whole table is followed in memory. */
  nested: boolean
  key: string
}

/** The plan of a shape's where, and every dependency under it (each after the dependencies it uses). */
export interface SubqueryPlan extends WherePlan {
  dependencies: Dependency[]
  canonical: string
}

/** Compiles a where holding `IN (SELECT …)`; null when it holds none (the plain compiler takes it). */
export type FilterCompiler = (input: {
  where: string
  params: Readonly<Record<string, string>>
  table: TableInfo
  allowed: readonly string[] | null
  lookup: (schema: string, name: string) => Promise<TableInfo>
}) => Promise<SubqueryPlan | null>
