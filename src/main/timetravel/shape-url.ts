import type { ShapeDefinition } from '../../shared/contract/timetravel'
import { POSITION_PARAMS, isSubsetParam } from '../../shared/protocol'
import { maskUrl } from '../../shared/shape-client/recorder'
import { TimeTravelInputError } from './log'

/** A shape service's endpoint, with what a client sends to it besides the log position. */
export interface ShapeTarget {
  /** The endpoint without a query, e.g. http://127.0.0.1:3000/v1/shape. */
  endpoint: string
  /** Every query parameter but the position ones: the definition's, and others (a secret, a proxy's own). */
  params: Record<string, string>
  headers: Record<string, string>
  /** The `handle` the URL names, if any: which log of the shape (the local server's files are found by it). */
  handle: string | null
  definition: ShapeDefinition
}

/** Longest shape URL taken (a where of the reference's largest size, params and all). */
const MAX_URL_LENGTH = 65_536
const POSITION: ReadonlySet<string> = new Set(POSITION_PARAMS)

/** The definition a shape URL's parameters spell, as the shape server reads them. */
export function definitionOf(params: URLSearchParams): ShapeDefinition {
  const table = params.get('table')
  if (!table) throw new TimeTravelInputError('the URL names no `table`: a shape URL is …/v1/shape?table=…')
  const replica = params.get('replica') ?? 'default'
  const log = params.get('log') ?? 'full'
  if (replica !== 'default' && replica !== 'full') throw new TimeTravelInputError(`replica=${replica} is not a replica`)
  if (log !== 'full' && log !== 'changes_only') throw new TimeTravelInputError(`log=${log} is not a log mode`)
  const numbered: Record<string, string> = {}
  for (const [name, value] of params) {
    const match = /^params\[(\d{1,4})\]$/.exec(name)
    if (match?.[1]) numbered[String(Number(match[1]))] = value
  }
  return {
    table,
    columns: params.get('columns'),
    queryableColumns: params.get('queryable_columns'),
    where: params.get('where'),
    params: numbered,
    replica,
    log
  }
}

/**
 * A shape URL (`…/v1/shape?table=…&where=…`, offsets and live parameters ignored), with extra parameters and headers
 * to send (a secret, a proxy's token). TimeTravelInputError when it is not one.
 */
export function parseShapeUrl(
  text: string,
  extra: { params?: Record<string, string>; headers?: Record<string, string> } = {}
): ShapeTarget {
  if (text.length > MAX_URL_LENGTH)
    throw new TimeTravelInputError(`the URL is longer than ${MAX_URL_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new TimeTravelInputError(`${text.slice(0, 200)} is not a URL`)
  }
  if (!/^https?:$/.test(url.protocol))
    throw new TimeTravelInputError(`${url.protocol} is not http(s): ${maskUrl(text)}`)
  for (const [name, value] of Object.entries(extra.params ?? {})) url.searchParams.set(name, value)
  const params: Record<string, string> = {}
  for (const [name, value] of url.searchParams) if (!POSITION.has(name) && !isSubsetParam(name)) params[name] = value
  return {
    endpoint: `${url.origin}${url.pathname}`,
    params,
    headers: { ...extra.headers },
    handle: url.searchParams.get('handle'),
    definition: definitionOf(url.searchParams)
  }
}

/** The endpoint with the shape's parameters, credentials masked: how reports name the shape. */
export function displayUrl(target: Pick<ShapeTarget, 'endpoint' | 'params' | 'definition'>): string {
  const url = new URL(target.endpoint)
  for (const [name, value] of Object.entries(target.params)) url.searchParams.set(name, value)
  if (target.definition.log !== 'full') url.searchParams.set('log', target.definition.log)
  return maskUrl(url.toString())
}
