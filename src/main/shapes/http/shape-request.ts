import { InvalidRequestError, type ShapeInput, invalid } from '../definition/definition'
import { type RequestedOffset, parseOffset } from '../storage/offset'

export interface ShapeRequest {
  offset: RequestedOffset
  /** Dropped for offsets `-1` and `now`, where it only busts caches. */
  handle: string | null
  live: boolean
  liveSse: boolean
  cursor: string | null
  input: ShapeInput
}

/** The last value of a repeated key, as the reference's parameter parser takes it. */
export function lastValue(query: URLSearchParams, key: string): string | null {
  const values = query.getAll(key)
  return values.length > 0 ? (values[values.length - 1] as string) : null
}

/** Present and not literally `false`: `live`, `live=`, `live=0` are all true, as in the reference. */
function flag(query: URLSearchParams, key: string): boolean {
  const value = lastValue(query, key)
  return value !== null && value !== 'false'
}

function placeholderParams(query: URLSearchParams, errors: Record<string, string[]>): Record<string, string> {
  const params: Record<string, string> = {}
  for (const [key, value] of query) {
    const match = /^params\[(.*)\]$/.exec(key)
    if (match)
      Object.defineProperty(params, match[1] ?? '', { value, enumerable: true, configurable: true, writable: true })
    else if (key === 'params') errors.params = ['is invalid']
  }
  return params
}

function enumValue<T extends string>(
  query: URLSearchParams,
  key: string,
  allowed: readonly T[],
  fallback: T,
  errors: Record<string, string[]>
): T {
  const value = lastValue(query, key)
  if (value === null) return fallback
  if ((allowed as readonly string[]).includes(value)) return value as T
  errors[key] = ['is invalid']
  return fallback
}

/** The shape definition part of a query string (also what DELETE and subsets read). */
export function shapeInputOf(query: URLSearchParams, errors: Record<string, string[]> = {}): ShapeInput {
  return {
    table: lastValue(query, 'table') ?? '',
    columns: lastValue(query, 'columns'),
    queryableColumns: lastValue(query, 'queryable_columns'),
    where: lastValue(query, 'where'),
    params: placeholderParams(query, errors),
    replica: enumValue(query, 'replica', ['default', 'full'] as const, 'default', errors),
    log: enumValue(query, 'log', ['full', 'changes_only'] as const, 'full', errors)
  }
}

/** Validates the protocol parameters in the reference's order; throws InvalidRequestError naming the first bad one. */
export function parseShapeRequest(query: URLSearchParams): ShapeRequest {
  const errors: Record<string, string[]> = {}
  const input = shapeInputOf(query, errors)
  const offsetText = lastValue(query, 'offset')
  if (offsetText === null || offsetText === '') errors.offset = ["can't be blank"]
  if (Object.keys(errors).length > 0) throw new InvalidRequestError(errors)
  const offset = parseOffset(offsetText as string)
  if (!offset) throw invalid('offset', 'has invalid format')
  const handle = offset.kind === 'at' ? lastValue(query, 'handle') : null
  if (offset.kind === 'at' && !handle) throw invalid('handle', "can't be blank when offset != -1")
  const live = flag(query, 'live')
  if (live && offset.kind === 'start') throw invalid('live', "can't be true when offset == -1")
  if (live && offset.kind === 'now') throw invalid('live', "can't be true when offset is 'now'")
  const liveSse = query.has('live_sse') ? flag(query, 'live_sse') : flag(query, 'experimental_live_sse')
  if (liveSse && !live) throw invalid('live_sse', "can't be true unless live is also true")
  if (input.table === '') throw invalid('table', "can't be blank")
  return { offset, handle, live, liveSse, cursor: lastValue(query, 'cursor'), input }
}
