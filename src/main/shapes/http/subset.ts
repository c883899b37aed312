import { randomInt } from 'node:crypto'
import type { QueryArrayConfig } from 'pg'
import { InvalidRequestError, whereErrorMessage } from '../definition/definition'
import { formatOffset } from '../storage/offset'
import { InsertEncoder } from '../storage/messages'
import { selectRowsSql } from '../definition/row-sql'
import type { Shape } from '../storage/shape'
import { inSnapshot } from '../snapshot/snapshot'
import { schemaHeader } from '../definition/table-info'
import { WhereError, compileOrderBy, compileWhere, isCallersQueryError } from '../../sql'
import { CACHE_CONTROL } from './protocol'
import type { RawSubset } from './request-body'
import { type LogRequestContext, conflict } from './serve-log'

/** Documented bounds of a subset page. */
export const MAX_SUBSET_LIMIT = 100_000
export const MAX_SUBSET_OFFSET = 10_000_000

interface Subset {
  whereSql: string | null
  orderBySql: string | null
  limit: number | null
  offset: number | null
}

const subsetError = (field: string, message: string): InvalidRequestError =>
  new InvalidRequestError({ subset: { [field]: [message] } })

function integer(value: unknown, field: string, min: number, max: number): number | null {
  if (value === undefined || value === null) return null
  const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value
  if (typeof number !== 'number' || !Number.isInteger(number)) throw subsetError(field, 'is invalid')
  if (number < min)
    throw subsetError(field, min === 0 ? 'must be greater than or equal to 0' : 'must be greater than 0')
  if (number > max) throw subsetError(field, `must be less than or equal to ${max}`)
  return number
}

function params(raw: RawSubset): Record<string, string> {
  let value = raw.params
  if (value === undefined || value === null) return {}
  if (raw.paramsAsJson && typeof value === 'string') {
    try {
      value = JSON.parse(value)
    } catch {
      throw subsetError('params', 'params must be valid JSON')
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw subsetError('params', 'params must be a JSON object')
  const entries = Object.entries(value as Record<string, unknown>)
  const keys = entries.map(([key]) => key)
  if (
    keys.some((key) => !/^\d+$/.test(key)) ||
    [...keys]
      .map(Number)
      .sort((a, b) => a - b)
      .some((n, i) => n !== i + 1)
  ) {
    throw subsetError('params', 'Parameters must be numbered sequentially, starting from 1')
  }
  const result: Record<string, string> = {}
  for (const [key, item] of entries) result[key] = typeof item === 'string' ? item : JSON.stringify(item)
  return result
}

function text(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') throw subsetError(field, 'must be a string')
  return value
}

function whereMessage(error: WhereError): string {
  return whereErrorMessage(error).replace(
    /\bsubqueries are not allowed in where\b/,
    'Subqueries are not allowed in subsets'
  )
}

/** Validates a subset against its shape: it may only narrow the shape, and only through queryable columns. */
export function compileSubset(raw: RawSubset, shape: Shape['definition']): Subset {
  const limit = integer(raw.limit, 'limit', 1, MAX_SUBSET_LIMIT)
  const offset = integer(raw.offset, 'offset', 0, MAX_SUBSET_OFFSET)
  const orderBy = text(raw.orderBy, 'order_by')
  const where = text(raw.where, 'where')
  if ((limit !== null || offset !== null) && !orderBy)
    throw subsetError('order_by', 'order_by is required when limit or offset is present')
  const allowed = shape.queryable ?? undefined
  const columns = shape.table.columnTypes
  try {
    const compiled =
      where === null ? null : compileWhere({ where, params: params(raw), columns, allowedColumns: allowed })
    const ordered = orderBy === null ? null : compileOrderBy(orderBy, columns, allowed)
    return { whereSql: compiled?.sql ?? null, orderBySql: ordered?.sql ?? null, limit, offset }
  } catch (error) {
    if (!(error instanceof WhereError)) throw error
    throw subsetError(
      error.param === 'order_by' ? 'order_by' : error.param.startsWith('params') ? 'params' : 'where',
      whereMessage(error)
    )
  }
}

/** The subset's SELECT: `(shape where) AND (subset where)`, ordered and paged. */
function subsetSql(shape: Shape, subset: Subset, columns: readonly string[]): string {
  const conditions = [shape.definition.where?.sql, subset.whereSql].filter(
    (condition): condition is string => !!condition
  )
  const whereSql = conditions.length > 0 ? conditions.map((condition) => `(${condition})`).join(' AND ') : null
  let sql = selectRowsSql(shape.definition.table, columns, whereSql)
  if (subset.orderBySql) sql += ` ORDER BY ${subset.orderBySql}`
  if (subset.limit !== null) sql += ` LIMIT ${subset.limit}`
  if (subset.offset !== null) sql += ` OFFSET ${subset.offset}`
  return sql
}

/** Serves a subset snapshot (POST body or legacy `subset__*`): rows plus the snapshot they were read in. */
export async function serveSubset(context: LogRequestContext, raw: RawSubset): Promise<void> {
  const { service, request, definition, r } = context
  const subset = compileSubset(raw, definition)
  let shape: Shape
  if (request.offset.kind === 'at') {
    const active = service.active(definition.identity)
    if (!active || active.handle !== request.handle)
      return conflict(context, active ?? (await service.shapeFor(definition)))
    service.used(active)
    shape = active
  } else {
    shape = await service.shapeFor(definition)
  }
  const runtime = shape.definition.subquery ? service.subqueryRuntime(shape.handle) : undefined
  if (shape.definition.subquery && !runtime) return conflict(context, await service.shapeFor(definition))
  const mark = randomInt(0, 2 ** 31 - 1)
  let answer: { rows: string[]; metadata: Record<string, unknown> }
  try {
    answer = await inSnapshot(service.pool, async (client, info) => {
      const metadata = {
        xmin: info.xmin,
        xmax: info.xmax,
        xip_list: info.xipList,
        database_lsn: info.databaseLsn,
        snapshot_mark: mark
      }
      const subquery = runtime?.subsetQuery(subset)
      if (subquery) {
        const { rows } = await client.query<Array<string | null>>({ text: subquery.text, rowMode: 'array' })
        return { rows: rows.map((row) => subquery.line(row, { snapshot_mark: mark })), metadata }
      }
      const encoder = new InsertEncoder(shape.definition, { snapshot_mark: mark })
      const query: QueryArrayConfig = { text: subsetSql(shape, subset, encoder.columns), rowMode: 'array' }
      const result = await client.query<Array<string | null>>(query)
      return { rows: result.rows.map((row) => encoder.encode(row)), metadata }
    })
  } catch (error) {
    if (isCallersQueryError(error)) return r.invalidRequest({ subset: { where: error.message } })
    throw error
  }
  const offset =
    request.offset.kind === 'start'
      ? { tx: 0n, op: 0 }
      : request.offset.kind === 'now'
        ? shape.lastOffset
        : request.offset.offset
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': CACHE_CONTROL.noCache,
    [r.names.snapshot]: 'true',
    [r.names.handle]: shape.handle,
    [r.names.offset]: formatOffset(offset),
    [r.names.schema]: JSON.stringify(schemaHeader(definition.table, definition.columns))
  }
  r.send(200, headers, `{"metadata":${JSON.stringify(answer.metadata)},"data":[${answer.rows.join(',')}]}`)
}
