import type { Node } from 'libpg-query'
import { qualifiedName } from '../definition/row-sql'
import { TableNotFoundError, type TableInfo } from '../definition/table-info'
import {
  type Alternatives,
  type CompileContext,
  type CompiledWhere,
  RowValues,
  WHERE_PREFIX,
  WhereError,
  WhereRuntimeError,
  allOf,
  bareWhereClause,
  anyOf,
  compileCondition,
  conditionProbes,
  deparseExpression,
  lookupColumn,
  parseSelect,
  quoteIdent
} from '../../sql'

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

type Lookup = (schema: string, name: string) => Promise<TableInfo>

const MAX_DISJUNCTS = 64
const UNSUPPORTED_SUBLINK = 'only `value IN (SELECT ...)` sublinks are supported right now'

const hasSublink = (node: unknown): boolean => JSON.stringify(node).includes('"SubLink"')

/** The first sublink in a tree that is not a plain `IN (SELECT …)` (EXISTS, a scalar subquery, `= ANY (SELECT …)`). */
function otherSublink(tree: unknown): { location?: number } | undefined {
  if (Array.isArray(tree)) return tree.map(otherSublink).find(Boolean)
  if (tree === null || typeof tree !== 'object') return undefined
  const link = (tree as { SubLink?: { subLinkType?: string; operName?: unknown[]; location?: number } }).SubLink
  if (link && (link.subLinkType !== 'ANY_SUBLINK' || (link.operName ?? []).length > 0)) return link
  return Object.values(tree).map(otherSublink).find(Boolean)
}

function locationOf(node: Node | undefined): number | undefined {
  if (!node) return undefined
  const inner = Object.values(node)[0] as { location?: number } | undefined
  return typeof inner?.location === 'number' ? inner.location : undefined
}

class Compiler {
  readonly dependencies: Dependency[] = []
  readonly usedParams = new Set<number>()

  constructor(
    readonly params: Readonly<Record<string, string>>,
    private readonly lookup: Lookup
  ) {}

  fail(message: string, location: number | undefined): never {
    throw new WhereError(
      message,
      'where',
      location !== undefined && location >= 0 ? location - WHERE_PREFIX.length + 1 : undefined
    )
  }

  context(table: TableInfo, allowed: readonly string[] | null, referenced: Set<string>): CompileContext {
    return {
      columns: table.columnTypes,
      allowed: allowed ? new Set(allowed) : undefined,
      params: this.params,
      usedParams: this.usedParams,
      referenced,
      offset: WHERE_PREFIX.length,
      depth: 0
    }
  }

  async plan(node: Node | undefined, table: TableInfo, allowed: readonly string[] | null): Promise<WherePlan> {
    const referenced = new Set<string>()
    const positions: Position[] = []
    const bySql = new Map<string, number>()
    const position = (atom: Position): number => {
      const known = bySql.get(atom.sql)
      if (known !== undefined) return known
      positions.push(atom)
      bySql.set(atom.sql, positions.length - 1)
      return positions.length - 1
    }
    const dnf = async (expr: Node, negated: boolean): Promise<number[][]> => {
      if (!hasSublink(expr)) {
        const condition = compileCondition(
          this.context(table, allowed, referenced),
          negated ? { BoolExpr: { boolop: 'NOT_EXPR', args: [expr] } } : expr
        )
        const sql = deparseExpression(condition.ast)
        if (sql === undefined)
          this.fail(
            'where could not be rebuilt as equivalent SQL; add parentheses around the operands of IS and comparison operators',
            locationOf(expr)
          )
        return [
          [
            position({
              kind: 'plain',
              sql: `(${sql})`,
              evaluate: condition.evaluate,
              probes: conditionProbes(condition) ?? null
            })
          ]
        ]
      }
      if ('BoolExpr' in expr) {
        const { boolop, args = [] } = expr.BoolExpr
        if (boolop === 'NOT_EXPR') return dnf(args[0] as Node, !negated)
        // one after another, so that positions are numbered in the order of the where's text
        const parts: number[][][] = []
        for (const arg of args) parts.push(await dnf(arg, negated))
        const isAnd = (boolop === 'AND_EXPR') !== negated
        if (!isAnd) return parts.flat()
        let product: number[][] = [[]]
        for (const part of parts) {
          product = product.flatMap((left) => part.map((right) => [...new Set([...left, ...right])]))
          if (product.length > MAX_DISJUNCTS)
            this.fail(
              `where has more than ${MAX_DISJUNCTS} OR arms once its subqueries are spread out: simplify it`,
              locationOf(expr)
            )
        }
        return product
      }
      if ('SubLink' in expr) return [[position(await this.sublink(expr.SubLink, negated, table, allowed, referenced))]]
      const other = otherSublink(expr)
      if (other) this.fail(UNSUPPORTED_SUBLINK, other.location)
      return this.fail(
        '`IN (SELECT ...)` may only be combined with AND, OR and NOT, not used inside other expressions',
        locationOf(expr)
      )
    }
    const disjuncts = node ? await dnf(node, false) : [[]]
    if (disjuncts.length > MAX_DISJUNCTS)
      this.fail(
        `where has more than ${MAX_DISJUNCTS} OR arms once its subqueries are spread out: simplify it`,
        locationOf(node)
      )
    const sql = disjuncts
      .map((conjuncts) =>
        conjuncts.length === 0 ? 'true' : conjuncts.map((index) => positions[index]?.sql).join(' AND ')
      )
      .join(' OR ')
    return { positions, disjuncts, sql: `(${sql})`, referenced: [...referenced].sort() }
  }

  private lhsColumns(
    testexpr: Node | undefined,
    table: TableInfo,
    allowed: readonly string[] | null,
    location: number | undefined
  ): string[] {
    const refs = testexpr && 'RowExpr' in testexpr ? (testexpr.RowExpr.args ?? []) : testexpr ? [testexpr] : []
    if (refs.length === 0) this.fail(UNSUPPORTED_SUBLINK, location)
    return refs.map((ref) => {
      const fields = 'ColumnRef' in ref ? (ref.ColumnRef.fields ?? []) : []
      const field = fields[0]
      if (fields.length !== 1 || !field || !('String' in field))
        this.fail(
          'the left side of `IN (SELECT ...)` must be a column of the shape table or a row of them, as `(a, b)`',
          locationOf(ref)
        )
      const name = field.String.sval ?? ''
      if (!lookupColumn(table.columnTypes, name) || (allowed && !allowed.includes(name)))
        this.fail(`unknown column "${name}"`, locationOf(ref))
      return name
    })
  }

  private async sublink(
    link: Extract<Node, { SubLink: unknown }>['SubLink'],
    negated: boolean,
    table: TableInfo,
    allowed: readonly string[] | null,
    referenced: Set<string>
  ): Promise<Position> {
    const location = link.location
    if (link.subLinkType !== 'ANY_SUBLINK' || (link.operName ?? []).length > 0) this.fail(UNSUPPORTED_SUBLINK, location)
    const lhs = this.lhsColumns(link.testexpr, table, allowed, location)
    const select = link.subselect && 'SelectStmt' in link.subselect ? link.subselect.SelectStmt : undefined
    if (!select) this.fail(UNSUPPORTED_SUBLINK, location)
    const { targetList = [], fromClause = [], whereClause, op, limitOption, ...clauses } = select
    const extra = Object.entries(clauses).filter(([, value]) => value !== undefined && value !== false)
    if (
      extra.length > 0 ||
      op !== 'SETOP_NONE' ||
      (limitOption !== undefined && limitOption !== 'LIMIT_OPTION_DEFAULT')
    )
      this.fail('SELECT statement must not contain any clauses', location)
    const range =
      fromClause.length === 1 && fromClause[0] && 'RangeVar' in fromClause[0] ? fromClause[0].RangeVar : undefined
    if (!range || range.inh === false) this.fail('Expected a single table reference', location)
    const inner = await this.table(range.schemaname ?? 'public', range.relname ?? '', range.location)
    const columns = targetList.map((target) => {
      const res = 'ResTarget' in target ? target.ResTarget : undefined
      const fields = res?.val && 'ColumnRef' in res.val ? (res.val.ColumnRef.fields ?? []) : []
      const field = fields[0]
      if (!res || res.name || fields.length !== 1 || !field || !('String' in field))
        this.fail('Expected a plain column reference', locationOf(res?.val) ?? location)
      const name = field.String.sval ?? ''
      if (!lookupColumn(inner.columnTypes, name))
        this.fail(`unknown column "${name}" in table ${qualifiedName(inner)}`, locationOf(res.val))
      return name
    })
    if (columns.length !== lhs.length)
      this.fail(`subquery has ${columns.length > lhs.length ? 'too many' : 'too few'} columns`, location)
    lhs.forEach((name, index) => {
      const left = lookupColumn(table.columnTypes, name)?.type
      const right = lookupColumn(inner.columnTypes, columns[index] ?? '')?.type
      if (left !== right)
        this.fail(`left side of \`IN (SELECT ...)\` has type ${left} but subquery returns ${right}`, location)
      referenced.add(name)
    })
    const plan = await this.plan(whereClause, inner, null)
    const nested = plan.positions.some((position) => position.kind === 'sublink')
    const key = JSON.stringify([inner.schema, inner.name, columns, plan.sql])
    let dependency = this.dependencies.findIndex((known) => known.key === key)
    if (dependency === -1) {
      this.dependencies.push({ table: inner, columns, plan, nested, key })
      dependency = this.dependencies.length - 1
    }
    // text compared by its bytes, as live changes are matched (a nondeterministic collation would equate others)
    const operand = (name: string) =>
      lookupColumn(table.columnTypes, name)?.category === 'text' ? `${quoteIdent(name)} COLLATE "C"` : quoteIdent(name)
    const left = lhs.length === 1 ? operand(lhs[0] ?? '') : `(${lhs.map(operand).join(', ')})`
    const test = `${left} IN (SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(inner)} WHERE ${plan.sql})`
    return { kind: 'sublink', sql: negated ? `(NOT coalesce(${test}, false))` : `(${test})`, lhs, negated, dependency }
  }

  private async table(schema: string, name: string, location: number | undefined): Promise<TableInfo> {
    try {
      return await this.lookup(schema, name)
    } catch (error) {
      if (error instanceof TableNotFoundError) this.fail(error.message, location)
      throw error
    }
  }
}

/**
 * Compiles a where that holds `IN (SELECT …)`; null when it holds none (the ordinary compiler takes it). Throws
 * WhereError naming what the reference does not allow.
 */
export async function compileSubqueryWhere(input: {
  where: string
  params: Readonly<Record<string, string>>
  table: TableInfo
  allowed: readonly string[] | null
  lookup: Lookup
}): Promise<SubqueryPlan | null> {
  const select = parseSelect(WHERE_PREFIX, input.where, 'where')
  if (!hasSublink(select.whereClause)) return null
  const whereClause = bareWhereClause(select)
  const compiler = new Compiler(input.params, input.lookup)
  const plan = await compiler.plan(whereClause, input.table, input.allowed)
  for (const key of Object.keys(input.params)) {
    if (!compiler.usedParams.has(Number(key)))
      throw new WhereError(`params[${key}] is not used: where has no $${key}`, 'params')
  }
  return { ...plan, dependencies: compiler.dependencies, canonical: plan.sql }
}

/**
 * A subquery-free dependency's where as the shape router takes it, so that a change of its table reaches only the
 * shapes whose subquery result it can alter (its old or new row is in it); null for a nested one (it follows every row).
 */
export function dependencyWhere(dependency: Dependency): CompiledWhere | null {
  if (dependency.nested) return null
  const { positions, disjuncts, sql, referenced } = dependency.plan
  const plain = (index: number): Extract<Position, { kind: 'plain' }> | undefined => {
    const position = positions[index]
    return position?.kind === 'plain' ? position : undefined
  }
  const matchesValues = (row: RowValues): boolean =>
    disjuncts.some((conjuncts) =>
      conjuncts.every((index) => {
        const position = plain(index)
        return position !== undefined && plainHolds(position, row)
      })
    )
  return {
    sql,
    matches: (row) => matchesValues(new RowValues(row)),
    matchesValues,
    referencedColumns: referenced,
    probes:
      anyOf(disjuncts.map((conjuncts) => allOf(conjuncts.map((index) => plain(index)?.probes ?? undefined)))) ?? null,
    canonical: sql
  }
}

/** Whether an atom holds for a row: true only when Postgres says TRUE (NULL and refused evaluations are false). */
export function plainHolds(position: Extract<Position, { kind: 'plain' }>, row: RowValues): boolean {
  try {
    return position.evaluate(row) === true
  } catch (error) {
    if (error instanceof WhereRuntimeError) return false
    throw error
  }
}
