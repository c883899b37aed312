import { DEBUG_SHAPES_MAX_LIMIT, DEBUG_SHAPES_PATH, ShapeQuerySchema } from '../../../shared/protocol/debug-shapes'
import { serverState } from '../server-state'
import type { ShapeService } from '../service'
import { preflightHeaders, secretMatches } from './protocol'
import type { Responder } from './responder'

export { DEBUG_SHAPES_PATH }

export interface DebugShapesOptions {
  secret: string | undefined
  service(): ShapeService | null
  unavailable(): string | null
  log(line: string): void
}

const NO_STORE = { 'cache-control': 'no-store', 'surrogate-control': 'no-store' }

/**
 * `GET /v1/debug/shapes?limit=&after=`: the shape server's state (see server-state.ts), a page of shapes in last-use
 * order at a time. Guarded as `/v1/shape` is: the caller already passed the Host and Origin checks; `--secret` here.
 */
export async function serveDebugShapes(
  r: Responder,
  query: URLSearchParams,
  options: DebugShapesOptions
): Promise<void> {
  const method = r.req.method ?? 'GET'
  if (method === 'OPTIONS') return r.send(204, preflightHeaders(r.req), null)
  if (method !== 'GET' && method !== 'HEAD')
    return r.json(405, { message: `${method} is not allowed on ${DEBUG_SHAPES_PATH}` }, { allow: 'GET, HEAD, OPTIONS' })
  if (options.secret !== undefined && !secretMatches(query, options.secret)) return r.unauthorized()
  const parsed = pageQuery(query)
  if (!parsed.ok) return r.invalidRequest(parsed.errors)
  const service = options.service()
  if (!service) {
    const reason = options.unavailable()
    return r.unavailable(reason ?? 'The shape server is starting, please retry', reason ? 60 : 1)
  }
  try {
    r.json(200, await serverState(service, parsed.query), NO_STORE)
  } catch (error) {
    options.log(`${DEBUG_SHAPES_PATH} failed: ${(error as Error).stack ?? String(error)}`)
    r.json(500, { error: 'Internal server error' })
  }
}

type PageQuery =
  { ok: true; query: ReturnType<typeof ShapeQuerySchema.parse> } | { ok: false; errors: Record<string, string[]> }

/** `limit` (0 to 1,000, default 100) and `after` (the `next` of the page before); other parameters are ignored. */
function pageQuery(query: URLSearchParams): PageQuery {
  const errors: Record<string, string[]> = {}
  const limitText = query.get('limit')
  const limit = limitText === null ? undefined : /^\d{1,7}$/.test(limitText) ? Number(limitText) : NaN
  if (limit !== undefined && !(limit <= DEBUG_SHAPES_MAX_LIMIT))
    errors.limit = [`must be a whole number from 0 to ${DEBUG_SHAPES_MAX_LIMIT}`]
  const parsed = ShapeQuerySchema.safeParse({ limit, after: query.get('after') ?? undefined })
  if (!parsed.success)
    for (const issue of parsed.error.issues) {
      const field = String(issue.path[0] ?? 'query')
      errors[field] ??= [issue.message]
    }
  return parsed.success && Object.keys(errors).length === 0 ? { ok: true, query: parsed.data } : { ok: false, errors }
}
