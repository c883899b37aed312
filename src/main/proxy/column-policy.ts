import { subsetParam } from '../../shared/protocol'
import { InputCapError, WhereError, checkInputCaps, checkParamsLength, deparseSortClause, parseSelect } from '../sql'
import { BodyError } from './request-body'
import { Refusal } from './refusal'
import type { CanonicalShape } from './shape-definition'
import { authoriseTree, notAllowed, queryableColumnsOf, type Scope, type TableGrants } from './subquery-grants'
import { parseWhere, rebuildWhere, type WhereTree } from './where-tree'

/** A where, parameter or LIKE pattern over the evaluator's caps: a 400 naming the cap. */
function capRefusal(error: unknown, what: string): unknown {
  return error instanceof InputCapError ? new Refusal(400, 'input_too_long', `${what}: ${error.message}`) : error
}

function checkCaps(tree: unknown, params: Readonly<Record<string, string>>, what: string): void {
  try {
    checkInputCaps(tree, params)
    checkParamsLength(params)
  } catch (error) {
    throw capRefusal(error, what)
  }
}

/**
 * A where the caller wrote (gatekeeper request, subset), as the proxy lets it through: every column it names allowed
 * (however quoted or nested), every subquery on a table granted to the caller with its row filter inside (`rebuilt`),
 * every parameter and pattern within the caps. Throws WhereError when the parser cannot read it.
 */
export function authorisedWhere(
  text: string,
  params: Readonly<Record<string, string>>,
  scope: Scope,
  grants: TableGrants,
  what: string
): { tree: WhereTree; rebuilt: boolean } {
  const tree = parseWhere(text)
  checkCaps(tree.node, params, what)
  const rebuilt = authoriseTree(tree.node, scope, grants, what)
  return { tree: rebuilt ? rebuildWhere(tree.node) : tree, rebuilt }
}

const ORDER_BY_PREFIX = 'SELECT 1 FROM t ORDER BY '

/** An order_by the caller wrote: the same rules; its text, rebuilt when a subquery got a row filter. */
function authorisedOrderBy(text: string, scope: Scope, grants: TableGrants, what: string): string {
  const sortClause = parseSelect(ORDER_BY_PREFIX, text, 'order_by').sortClause ?? []
  checkCaps(sortClause, {}, what)
  if (!authoriseTree(sortClause, scope, grants, what)) return text
  const rebuilt = deparseSortClause(sortClause)
  if (rebuilt === undefined)
    throw new WhereError('order_by could not be rebuilt as equivalent SQL; add parentheses', 'order_by')
  return rebuilt
}

/** The structured forms (`where_expr`, `order_by_expr`) name columns as `{column: …}`. */
function checkExpressionColumns(expression: unknown, scope: Scope, what: string): void {
  const allowed = scope.allowed
  if (!allowed) return
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit)
    if (value === null || typeof value !== 'object') return
    const column = (value as Record<string, unknown>).column
    if (column !== undefined && (typeof column !== 'string' || !allowed.has(column)))
      throw notAllowed(String(column), what, scope)
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
  params?: unknown
  whereExpr?: unknown
  orderByExpr?: unknown
}

/** Subset params as the shape service reads them: an object of `n: value`, values not strings as their JSON. */
function subsetParams(params: unknown): Record<string, string> {
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return {}
  return Object.fromEntries(
    Object.entries(params).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)])
  )
}

/** The subset's where and order_by where they were rebuilt (a subquery got its row filter). */
function authoriseSubsetParts(
  parts: SubsetParts,
  scope: Scope,
  grants: TableGrants,
  source: string
): { where?: string; orderBy?: string } {
  const result: { where?: string; orderBy?: string } = {}
  try {
    const params = subsetParams(parts.params)
    if (typeof parts.where === 'string') {
      const { tree, rebuilt } = authorisedWhere(parts.where, params, scope, grants, `the subset where (${source})`)
      if (rebuilt) result.where = tree.canonical
    } else checkCaps([], params, `the subset params (${source})`)
    if (typeof parts.orderBy === 'string')
      result.orderBy = authorisedOrderBy(parts.orderBy, scope, grants, `the subset order_by (${source})`)
  } catch (error) {
    // a subset the parser cannot read cannot be checked; the shape service would refuse it too
    if (error instanceof WhereError)
      throw new BodyError(
        400,
        'invalid_subset',
        `the subset ${error.param} (${source}) cannot be read: ${error.message}`
      )
    throw error
  }
  if (parts.whereExpr !== undefined) checkExpressionColumns(parts.whereExpr, scope, `the subset where_expr (${source})`)
  if (parts.orderByExpr !== undefined)
    checkExpressionColumns(parts.orderByExpr, scope, `the subset order_by_expr (${source})`)
  return result
}

/**
 * A subset (query or POST body) as it may go upstream: refused when it names a column the shape does not let the
 * caller query, reads a table not granted to them, or is over a cap; its where and order_by rebuilt where a subquery
 * got its row filter (else passed on as the client wrote them).
 */
export function authoriseSubset(
  shape: CanonicalShape,
  grants: TableGrants,
  protocol: Array<[string, string]>,
  body: Uint8Array | undefined
): { protocol: Array<[string, string]>; body: Uint8Array | undefined } {
  const scope: Scope = { table: shape.name, allowed: queryableColumnsOf(shape) }
  const query = new Map(protocol)
  const exprOf = (key: string) => (query.has(key) ? parsedJson(query.get(key) as string, key) : undefined)
  const params = query.get(subsetParam('params'))
  const fromQuery = authoriseSubsetParts(
    {
      where: query.get(subsetParam('where')),
      orderBy: query.get(subsetParam('order_by')),
      params: params === undefined ? undefined : parsedJson(params, subsetParam('params')),
      whereExpr: exprOf(subsetParam('where_expr')),
      orderByExpr: exprOf(subsetParam('order_by_expr'))
    },
    scope,
    grants,
    'query'
  )
  const rebuilt = new Map([
    [subsetParam('where'), fromQuery.where],
    [subsetParam('order_by'), fromQuery.orderBy]
  ])
  const forwarded = protocol.map(([key, value]): [string, string] => [key, rebuilt.get(key) ?? value])
  if (!body || body.length === 0) return { protocol: forwarded, body }
  const fields = JSON.parse(new TextDecoder().decode(body)) as Record<string, unknown>
  const fromBody = authoriseSubsetParts(
    {
      where: fields.where,
      orderBy: fields.order_by,
      params: fields.params,
      whereExpr: fields.where_expr,
      orderByExpr: fields.order_by_expr
    },
    scope,
    grants,
    'body'
  )
  if (fromBody.where === undefined && fromBody.orderBy === undefined) return { protocol: forwarded, body }
  const next = { ...fields, where: fromBody.where ?? fields.where, order_by: fromBody.orderBy ?? fields.order_by }
  return { protocol: forwarded, body: new TextEncoder().encode(JSON.stringify(next)) }
}
