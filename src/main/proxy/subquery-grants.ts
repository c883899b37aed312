import type { Node } from 'libpg-query'
import { bindClaims, checkRoles, isPrivileged } from './caller'
import { tableKey, type TablePolicy } from './config'
import { Refusal } from './refusal'
import { canonicaliseShape, tableText, type CanonicalShape } from './shape-definition'
import type { Caller } from './tokens'
import { bindPlaceholders, parseWhere } from './where-tree'

/**
 * What a caller's own conditions (a requested where, a subset's where and order_by) may read. Each level of the tree
 * may name only the columns its table lets the caller query: anything else is an oracle (`secret LIKE 'a%'` reads a
 * hidden column one character at a time through which rows come back). A subquery reads another table, so the same
 * holds one level down, and more: `owner_id IN (SELECT id FROM users WHERE email LIKE 'a%')` asks one question of a
 * table per request. A subquery is allowed only as `… IN (SELECT columns FROM table [WHERE …])`, on a table a
 * gatekeeper policy grants the caller, with that policy's column rules and its row filter put inside it.
 */

/** What one level of a caller's tree may name. */
export interface Scope {
  /** The table the level reads, as written in messages. */
  table: string
  /** The columns it may name; null: the policy hides none. */
  allowed: ReadonlySet<string> | null
}

/** A table a subquery may read: its scope, and the row filter (bound to the caller's claims) it must keep. */
export interface TableGrant extends Scope {
  filter: Node | null
}

/** The caller's grant of a table, or a 403 naming it; `what` names the condition that reads it. */
export type TableGrants = (schema: string, name: string, what: string) => TableGrant

type SubLink = Extract<Node, { SubLink: unknown }>['SubLink']
type SelectStmt = Extract<Node, { SelectStmt: unknown }>['SelectStmt']

/** The columns the policy shows or lets the caller query; null when it hides none. */
export function queryableColumnsOf(
  shape: Pick<CanonicalShape, 'columns' | 'queryableColumns'>
): ReadonlySet<string> | null {
  const columns = shape.queryableColumns ?? shape.columns
  return columns ? new Set(columns) : null
}

export function notAllowed(column: string, what: string, scope: Scope): Refusal {
  return new Refusal(
    403,
    'columns_not_allowed',
    `${what} names ${column} of ${scope.table}, which this caller may not query; it may name ${[...(scope.allowed ?? [])].sort().join(', ')}`
  )
}

/** The tables of the gatekeeper's policies, as `caller` may read them in a subquery. */
export function grantsFor(tables: ReadonlyMap<string, TablePolicy>, caller: Caller): TableGrants {
  return (schema, name, what) => {
    const table = tableText({ schema, name })
    const policy = tables.get(tableKey(schema, name))
    if (!policy)
      throw new Refusal(
        403,
        'table_not_allowed',
        `${what} reads ${table} in a subquery, and no gatekeeper policy grants ${table}`
      )
    checkRoles(caller, policy.roles, `${what} reads ${table} in a subquery, which`)
    const shape = canonicaliseShape({ table, columns: policy.columns, queryableColumns: policy.queryableColumns })
    const rowFilter = policy.rowFilter && !isPrivileged(caller, policy) ? policy.rowFilter : null
    const filter = rowFilter
      ? bindPlaceholders(parseWhere(rowFilter.where).node, bindClaims(caller, rowFilter.params))
      : null
    return { table, allowed: queryableColumnsOf(shape), filter }
  }
}

/** One level of a tree: the columns it names (`a.b` as written) and its subqueries, which are levels of their own. */
function levelOf(tree: unknown): { columns: string[]; subqueries: SubLink[] } {
  const found = { columns: [] as string[], subqueries: [] as SubLink[] }
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit)
    if (value === null || typeof value !== 'object') return
    const node = value as Record<string, unknown>
    const ref = node.ColumnRef as { fields?: Node[] } | undefined
    if (ref) {
      found.columns.push(
        (ref.fields ?? []).map((field) => ('String' in field ? (field.String.sval ?? '') : '*')).join('.')
      )
      return
    }
    const link = node.SubLink as SubLink | undefined
    if (link) {
      found.subqueries.push(link)
      return visit(link.testexpr)
    }
    Object.values(node).forEach(visit)
  }
  visit(tree)
  return found
}

function unsupported(what: string, why: string): Refusal {
  return new Refusal(
    403,
    'subquery_not_allowed',
    `${what} holds a subquery the proxy cannot authorise (${why}): a subquery must read as \`column IN (SELECT columns FROM table [WHERE …])\``
  )
}

/** The SELECT of a `… IN (SELECT …)` of the one form the proxy can tell every table of. */
function plainSelect(link: SubLink, what: string): SelectStmt & { fromClause: [{ RangeVar: object }] } {
  if (link.subLinkType !== 'ANY_SUBLINK' || (link.operName ?? []).length > 0)
    throw unsupported(what, 'EXISTS, ANY, ALL, ARRAY and scalar subqueries are not allowed')
  const select = link.subselect && 'SelectStmt' in link.subselect ? link.subselect.SelectStmt : undefined
  if (!select) throw unsupported(what, 'it is not a SELECT')
  const { targetList, fromClause, whereClause: _where, op, limitOption, ...clauses } = select
  const extra = Object.entries(clauses).filter(([, value]) => value !== undefined && value !== false)
  if (extra.length > 0 || op !== 'SETOP_NONE' || (limitOption !== undefined && limitOption !== 'LIMIT_OPTION_DEFAULT'))
    throw unsupported(what, 'it has clauses besides SELECT, FROM and WHERE')
  const [range] = fromClause ?? []
  if (fromClause?.length !== 1 || !range || !('RangeVar' in range) || range.RangeVar.catalogname)
    throw unsupported(what, 'it reads something other than one table')
  const plain = (targetList ?? []).every(
    (target) =>
      'ResTarget' in target && !target.ResTarget.name && target.ResTarget.val && 'ColumnRef' in target.ResTarget.val
  )
  if (!plain || !targetList?.length) throw unsupported(what, 'it selects something other than columns')
  return select as SelectStmt & { fromClause: [{ RangeVar: object }] }
}

/**
 * Checks a level of a caller's tree and every subquery under it, putting each subquery's row filter into its WHERE (the
 * tree changes in place). True when the tree holds a subquery, so its text must be rebuilt from the tree.
 */
export function authoriseTree(tree: unknown, scope: Scope, grants: TableGrants, what: string): boolean {
  return authoriseLevel(tree, scope, grants, what, false)
}

function authoriseLevel(tree: unknown, scope: Scope, grants: TableGrants, what: string, subquery: boolean): boolean {
  const { columns, subqueries } = levelOf(tree)
  // a subquery's columns are its own table's: a qualified name could reach the table around it
  const odd = subquery ? columns.find((column) => column.includes('.') || column.includes('*')) : undefined
  if (odd !== undefined)
    throw unsupported(what, `it names ${odd}: a subquery names columns of its own table, unqualified`)
  const allowed = scope.allowed
  const hidden = allowed ? columns.find((column) => !allowed.has(column)) : undefined
  if (hidden !== undefined) throw notAllowed(hidden, what, scope)
  for (const link of subqueries) {
    const select = plainSelect(link, what)
    const range = select.fromClause[0].RangeVar as { schemaname?: string; relname?: string }
    const grant = grants(range.schemaname ?? 'public', range.relname ?? '', what)
    const inner = `${what} (its subquery on ${grant.table})`
    authoriseLevel([select.targetList, select.whereClause], grant, grants, inner, true)
    if (grant.filter)
      select.whereClause = select.whereClause
        ? { BoolExpr: { boolop: 'AND_EXPR', args: [grant.filter, select.whereClause] } }
        : grant.filter
  }
  return subqueries.length > 0
}
