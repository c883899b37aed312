/** Query parameter names of the shape API that are not part of a shape's definition. */

/** The parameters that say where a client is in a shape's log and how it waits (the reference client's pass-through list). */
export const POSITION_PARAMS = [
  'offset',
  'handle',
  'live',
  'live_sse',
  'experimental_live_sse',
  'cursor',
  'expired_handle',
  'log',
  'cache-buster'
] as const

/** Fields of a subset request, as POST body keys; as query parameters they are spelled `subset__<field>`. */
export const SUBSET_FIELDS = ['where', 'params', 'limit', 'offset', 'order_by', 'where_expr', 'order_by_expr'] as const
export type SubsetField = (typeof SUBSET_FIELDS)[number]

export const SUBSET_PARAM_PREFIX = 'subset__'
export const subsetParam = (field: SubsetField): string => `${SUBSET_PARAM_PREFIX}${field}`
export const SUBSET_PARAMS: readonly string[] = SUBSET_FIELDS.map(subsetParam)
/** `subset__where`, or the deep-object form `subset[where]` some servers read the same. */
export const isSubsetParam = (name: string): boolean =>
  name.startsWith(SUBSET_PARAM_PREFIX) || name.startsWith('subset[')

/** Parameters a client may not set as part of a shape's definition: the position parameters and subset parameters. */
export const RESERVED_PARAMS: readonly string[] = [...POSITION_PARAMS, ...SUBSET_PARAMS]
export const isReservedParam = (name: string): boolean =>
  (POSITION_PARAMS as readonly string[]).includes(name) || name.startsWith(SUBSET_PARAM_PREFIX)
