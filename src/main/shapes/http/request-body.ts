import type { IncomingMessage } from 'node:http'
import { parseJsonObjectBody, readRequestBytes, RequestBodyError } from '../../net/request-body'
import { isSubsetParam, SUBSET_FIELDS, subsetParam, type SubsetField } from '../../../shared/protocol'

/** POST bodies above this are refused with 413 (the reference's limit). */
export const MAX_BODY_BYTES = 8_000_000

export type BodyResult =
  | { ok: true; value: Record<string, unknown> | null }
  | { ok: false; status: number; error: { error: string; details?: string } }

export async function readJsonBody(req: IncomingMessage): Promise<BodyResult> {
  try {
    return { ok: true, value: parseJsonObjectBody(await readRequestBytes(req, MAX_BODY_BYTES)) }
  } catch (error) {
    if (!(error instanceof RequestBodyError)) throw error
    if (error.code === 'body_too_large')
      return {
        ok: false,
        status: 413,
        error: { error: `Request body too large (the limit is ${MAX_BODY_BYTES} bytes)` }
      }
    if (error.code === 'invalid_json')
      return { ok: false, status: 400, error: { error: 'Invalid JSON in request body', details: error.details ?? '' } }
    return { ok: false, status: 400, error: { error: 'Request body must be a JSON object' } }
  }
}

/** A subset request as given, before validation: from a POST body or legacy `subset__*` query parameters. */
export interface RawSubset {
  where: unknown
  params: unknown
  limit: unknown
  offset: unknown
  orderBy: unknown
  /** Legacy GET sends params as a JSON string. */
  paramsAsJson: boolean
}

function fromQuery(query: URLSearchParams): RawSubset | null {
  const keys = [...query.keys()].filter(isSubsetParam)
  if (keys.length === 0) return null
  const get = (name: SubsetField) => query.get(subsetParam(name)) ?? query.get(`subset[${name}]`) ?? undefined
  return {
    where: get('where'),
    params: get('params'),
    limit: get('limit'),
    offset: get('offset'),
    orderBy: get('order_by'),
    paramsAsJson: true
  }
}

function fromBody(body: Record<string, unknown>): RawSubset | null {
  const nested = body.subset
  const source =
    typeof nested === 'object' && nested !== null && !Array.isArray(nested) ? (nested as Record<string, unknown>) : body
  if (source === body && !SUBSET_FIELDS.some((key) => Object.hasOwn(body, key))) return null
  return {
    where: source.where,
    params: source.params,
    limit: source.limit,
    offset: source.offset,
    orderBy: source.order_by,
    paramsAsJson: false
  }
}

/** The subset a request asks for, if any: any `subset__*` query key, or subset keys in a POST body. */
export function subsetOf(query: URLSearchParams, body: Record<string, unknown> | null): RawSubset | null {
  return (body ? fromBody(body) : null) ?? fromQuery(query)
}
