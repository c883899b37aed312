import type { Node } from 'libpg-query'
import { subsetParam } from '../../shared/protocol'
import { WhereError, parseSelect } from '../sql'
import { BodyError } from './request-body'
import { Refusal } from './refusal'
import type { CanonicalShape } from './shape-definition'
import { parseWhere } from './where-tree'

/**
 * What a caller's own conditions (a requested where, a subset's where and order_by) may name: the columns the policy
 * shows or lets them query. Anything else would be an oracle: `secret LIKE 'a%'` reads a hidden column one character
 * at a time through which rows come back. Null: the policy hides no column.
 */
export function queryableColumnsOf(
  shape: Pick<CanonicalShape, 'columns' | 'queryableColumns'>
): ReadonlySet<string> | null {
  const columns = shape.queryableColumns ?? shape.columns
  return columns ? new Set(columns) : null
}

function notAllowed(column: string, what: string, allowed: ReadonlySet<string>): Refusal {
  return new Refusal(
    403,
    'columns_not_allowed',
    `${what} names ${column}, which this caller may not query; it may name ${[...allowed].sort().join(', ')}`
  )
}

/** Every column a parse tree refers to (`a.b` as written), and whether it holds a subquery. */
function referencesOf(tree: unknown): { columns: string[]; subquery: boolean } {
  const found = { columns: [] as string[], subquery: false }
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit)
    if (value === null || typeof value !== 'object') return
    const node = value as Record<string, unknown>
    if ('SubLink' in node || 'RangeSubselect' in node) found.subquery = true
    const ref = node.ColumnRef as { fields?: Node[] } | undefined
    if (ref) {
      found.columns.push(
        (ref.fields ?? []).map((field) => ('String' in field ? (field.String.sval ?? '') : '*')).join('.')
      )
      return
    }
    Object.values(node).forEach(visit)
  }
  visit(tree)
  return found
}

function checkTree(tree: unknown, allowed: ReadonlySet<string>, what: string, param: 'where' | 'order_by'): void {
  const { columns, subquery } = referencesOf(tree)
  if (subquery) throw new WhereError('subqueries are not allowed', param)
  const hidden = columns.find((column) => !allowed.has(column))
  if (hidden !== undefined) throw notAllowed(hidden, what, allowed)
}

/** A where the caller wrote (gatekeeper request, subset): every column it names, however quoted or nested, must be allowed. */
export function checkWhereColumns(where: string, allowed: ReadonlySet<string>, what: string): void {
  checkTree(parseWhere(where).node, allowed, what, 'where')
}

const ORDER_BY_PREFIX = 'SELECT 1 FROM t ORDER BY '

function checkOrderByColumns(orderBy: string, allowed: ReadonlySet<string>, what: string): void {
  checkTree(parseSelect(ORDER_BY_PREFIX, orderBy, 'order_by').sortClause ?? [], allowed, what, 'order_by')
}

/** The structured forms (`where_expr`, `order_by_expr`) name columns as `{column: …}`. */
function checkExpressionColumns(expression: unknown, allowed: ReadonlySet<string>, what: string): void {
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit)
    if (value === null || typeof value !== 'object') return
    const column = (value as Record<string, unknown>).column
    if (column !== undefined && (typeof column !== 'string' || !allowed.has(column)))
      throw notAllowed(String(column), what, allowed)
    Object.values(value).forEach(visit)
  }
  visit(expression)
}

function parsedJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new BodyError(400, 'invalid_subset', `${what} is not valid JSON`)
  }
}

/** A subset's condition parts, from `subset__*` query parameters (text) or a POST body (JSON values). */
interface SubsetParts {
  where?: unknown
  orderBy?: unknown
  whereExpr?: unknown
  orderByExpr?: unknown
}

function checkSubsetParts(parts: SubsetParts, allowed: ReadonlySet<string>, source: string): void {
  try {
    if (typeof parts.where === 'string') checkWhereColumns(parts.where, allowed, `the subset where (${source})`)
    if (typeof parts.orderBy === 'string')
      checkOrderByColumns(parts.orderBy, allowed, `the subset order_by (${source})`)
  } catch (error) {
    // a subset the parser cannot read (or with a subquery) cannot be checked; the shape service would refuse it too
    if (error instanceof WhereError)
      throw new BodyError(
        400,
        'invalid_subset',
        `the subset ${error.param} (${source}) cannot be read: ${error.message}`
      )
    throw error
  }
  if (parts.whereExpr !== undefined)
    checkExpressionColumns(parts.whereExpr, allowed, `the subset where_expr (${source})`)
  if (parts.orderByExpr !== undefined)
    checkExpressionColumns(parts.orderByExpr, allowed, `the subset order_by_expr (${source})`)
}

/** Refuses a subset (query or POST body) that names a column the shape does not let the caller query. */
export function checkSubsetColumns(
  shape: CanonicalShape,
  protocol: Array<[string, string]>,
  body: Uint8Array | undefined
): void {
  const allowed = queryableColumnsOf(shape)
  if (!allowed) return
  const query = new Map(protocol)
  const exprOf = (key: string) => (query.has(key) ? parsedJson(query.get(key) as string, key) : undefined)
  checkSubsetParts(
    {
      where: query.get(subsetParam('where')),
      orderBy: query.get(subsetParam('order_by')),
      whereExpr: exprOf(subsetParam('where_expr')),
      orderByExpr: exprOf(subsetParam('order_by_expr'))
    },
    allowed,
    'query'
  )
  if (!body || body.length === 0) return
  const fields = JSON.parse(new TextDecoder().decode(body)) as Record<string, unknown>
  checkSubsetParts(
    { where: fields.where, orderBy: fields.order_by, whereExpr: fields.where_expr, orderByExpr: fields.order_by_expr },
    allowed,
    'body'
  )
}
