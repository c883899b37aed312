import type { Node } from 'libpg-query'
import { deparseSortClause } from './ast'
import { type ColumnTypes, lookupColumn } from './column-types'
import { parseSelect } from './compile-where'
import { WhereError } from './errors'

const ORDER_BY_PREFIX = 'SELECT 1 FROM t ORDER BY '

/**
 * Validates a subset ORDER BY: column names with ASC/DESC and NULLS FIRST/LAST only, rebuilt from the
 * parse tree so Postgres never sees the user's text.
 */
export function compileOrderBy(
  orderBy: string,
  columns: ColumnTypes,
  allowedColumns?: readonly string[]
): { sql: string } {
  const select = parseSelect(ORDER_BY_PREFIX, orderBy, 'order_by')
  const { sortClause, targetList, fromClause, op, limitOption, ...rest } = select
  const extra = Object.values(rest).some((value) => value !== undefined && value !== false)
  if (
    !sortClause?.length ||
    extra ||
    op !== 'SETOP_NONE' ||
    limitOption !== 'LIMIT_OPTION_DEFAULT' ||
    targetList?.length !== 1 ||
    fromClause?.length !== 1
  ) {
    throw new WhereError(
      'order_by must be a comma-separated list of columns with ASC/DESC and NULLS FIRST/LAST',
      'order_by'
    )
  }
  const allowed = allowedColumns ? new Set(allowedColumns) : undefined
  const items = sortClause.map((item): Node => {
    if (!('SortBy' in item)) throw new WhereError('order_by must list columns', 'order_by')
    const { node, sortby_dir: direction, sortby_nulls: nulls, useOp, location } = item.SortBy
    const position = location !== undefined && location >= 0 ? location - ORDER_BY_PREFIX.length + 1 : undefined
    const fields = node && 'ColumnRef' in node ? (node.ColumnRef.fields ?? []) : []
    const [field] = fields
    const exprLocation = node ? (Object.values(node)[0] as { location?: number } | undefined)?.location : undefined
    const exprPosition =
      exprLocation !== undefined && exprLocation >= 0 ? exprLocation - ORDER_BY_PREFIX.length + 1 : position
    if (node && 'ParamRef' in node)
      throw new WhereError(
        `parameter $${node.ParamRef.number ?? ''} is not supported in ORDER BY clauses`,
        'order_by',
        exprPosition
      )
    if (!field || fields.length !== 1 || !('String' in field)) {
      throw new WhereError(
        'expressions are not allowed in ORDER BY clauses: use column names only',
        'order_by',
        exprPosition
      )
    }
    if (useOp?.length || direction === 'SORTBY_USING')
      throw new WhereError('ORDER BY … USING is not allowed', 'order_by', position)
    const name = field.String.sval ?? ''
    if (!lookupColumn(columns, name) || (allowed && !allowed.has(name))) {
      throw new WhereError(`unknown column "${name}"`, 'order_by', exprPosition)
    }
    return {
      SortBy: {
        node: { ColumnRef: { fields: [{ String: { sval: name } }] } },
        sortby_dir: direction ?? 'SORTBY_DEFAULT',
        sortby_nulls: nulls ?? 'SORTBY_NULLS_DEFAULT'
      }
    }
  })
  const sql = deparseSortClause(items)
  if (sql === undefined) throw new WhereError('order_by could not be rebuilt as equivalent SQL', 'order_by')
  return { sql }
}
