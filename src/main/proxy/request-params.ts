/**
 * Reading a client's query string. The proxy never forwards it: it reads each key once, refuses any key whose copy
 * upstream could read differently (duplicates, case variants, deep-object forms), and rebuilds the upstream URL.
 */

import { RESERVED_PARAMS, SUBSET_PARAM_PREFIX } from '../../shared/protocol'

/** Protocol parameters a client may set (the pass-through list of the reference client). */
export const PROTOCOL_PARAMS: ReadonlySet<string> = new Set(RESERVED_PARAMS)

/** Keys only the proxy sets, whatever the endpoint. */
const ALWAYS_SERVER_OWNED = new Set(['secret', 'api_secret', 'queryable_columns', 'source_id', 'source_secret'])

/** Keys that define a shape: set by the proxy on a named shape, read and checked against the token on the token-checking proxy. */
const SHAPE_KEYS = new Set(['table', 'where', 'columns', 'params', 'replica'])

export class ParamError extends Error {
  override readonly name = 'ParamError'
  constructor(
    readonly status: 400,
    readonly code: string,
    message: string
  ) {
    super(message)
  }
}

export interface ClientParams {
  /** Protocol parameters, each given once. */
  protocol: Array<[string, string]>
  /** Shape-defining parameters, each given once, in their exact spelling (`table`, `where`, `columns`, `replica`, `params[n]`). */
  shape: Map<string, string>
  /** Keys that mean nothing to the shape API; not forwarded. */
  ignored: string[]
}

/** `params[1]` → `params`, `Subset[where]` → `subset`: the name a key would have after any server's folding. */
const baseName = (key: string) => key.toLowerCase().replace(/\[.*$/s, '')

const SHAPE_KEY_SPELLING = /^(table|where|columns|replica|params\[[1-9]\d*\])$/

/**
 * Classifies every query parameter. `shapeKeys` says what a shape key does here: `'forbidden'` (the proxy sets the
 * shape; `replica` stays the client's choice) or `'read'` (the token-checking proxy compares them with the token).
 */
export function readClientParams(search: URLSearchParams, shapeKeys: 'forbidden' | 'read'): ClientParams {
  const counts = new Map<string, number>()
  for (const key of search.keys()) counts.set(key, (counts.get(key) ?? 0) + 1)
  const result: ClientParams = { protocol: [], shape: new Map(), ignored: [] }
  const replicaIsProtocol = shapeKeys === 'forbidden'
  for (const [key, count] of counts) {
    const base = baseName(key)
    if (ALWAYS_SERVER_OWNED.has(base))
      throw new ParamError(400, 'server_owned_parameter', `${key} is set by the proxy and may not be sent by a client`)
    const isProtocol =
      PROTOCOL_PARAMS.has(key.toLowerCase()) ||
      base === 'subset' ||
      base.startsWith(SUBSET_PARAM_PREFIX) ||
      (replicaIsProtocol && base === 'replica')
    if (!isProtocol && !SHAPE_KEYS.has(base)) {
      result.ignored.push(key)
      continue
    }
    if (!isProtocol && shapeKeys === 'forbidden')
      throw new ParamError(
        400,
        'server_owned_parameter',
        `${key} is set by the proxy for this shape and may not be sent by a client`
      )
    const spelledRight = isProtocol
      ? PROTOCOL_PARAMS.has(key) || (replicaIsProtocol && key === 'replica')
      : SHAPE_KEY_SPELLING.test(key)
    if (!spelledRight)
      throw new ParamError(
        400,
        'unsupported_parameter',
        `${key} is not spelled as the shape API reads it (protocol: ${[...PROTOCOL_PARAMS].join(', ')}; shape: table, where, columns, replica, params[n])`
      )
    if (count > 1) throw new ParamError(400, 'duplicate_parameter', `${key} is given ${count} times; give it once`)
    const value = search.get(key) as string
    if (isProtocol) result.protocol.push([key, value])
    else result.shape.set(key, value)
  }
  return result
}

/** `params[1]=a&params[2]=b` → `{ "1": "a", "2": "b" }`. */
export function placeholderValues(shape: Map<string, string>): Record<string, string> {
  const values: Record<string, string> = {}
  for (const [key, value] of shape) {
    const match = /^params\[([1-9]\d*)\]$/.exec(key)
    if (match?.[1]) values[match[1]] = value
  }
  return values
}
