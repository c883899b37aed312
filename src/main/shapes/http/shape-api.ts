import type { IncomingMessage, ServerResponse } from 'node:http'
import { checkHostAndOrigin, hasTokenHeader, type OriginRule } from '../../net/guard'
import type { HostRule } from '../../net/host-rule'
import { Cancellation } from '../live/cancellation'
import { InvalidRequestError, type ResolvedShape } from '../definition/definition'
import { ServiceStoppingError, type ShapeService } from '../service'
import { ShapeGoneError } from '../storage/shape'
import { ShapeDamagedError } from '../storage/shape-log'
import { TableNotFoundError } from '../definition/table-info'
import { type HeaderBrand, protocolHeaderNames, SUBSET_FIELDS } from '../../../shared/protocol'
import { routingPath } from '../../net/request-path'
import { type CacheSettings, catchUpCacheControl, preflightHeaders, secretMatches, sseCacheControl } from './protocol'
import { type BodyResult, readJsonBody, subsetOf } from './request-body'
import { Responder } from './responder'
import { type LogRequest, replacement, serveLog, tooLarge } from './serve-log'
import type { AnswerTerms } from './answer'
import type { LiveSettings } from '../live/live-settings'
import { ShapeTooLargeError } from '../storage/shape-limits'
import { lastValue, parseShapeRequest, shapeInputOf } from './shape-request'
import { serveSubset } from './subset'
import { DEBUG_SHAPES_PATH, serveDebugShapes } from './debug-shapes'
import { serveCommitTimes } from './commit-times'

export interface ShapeApiOptions {
  brand: HeaderBrand
  secret: string | undefined
  /** Which Host names this server and which browser pages may call it (checked before anything else). */
  hosts: HostRule
  originAllowed: OriginRule
  /** This run's token: the app's own window (Origin `null` in Electron) sends it, and may call from any origin. */
  appToken: string
  live: LiveSettings
  cache: CacheSettings
  /** The engine of the connected database; null while it starts or reconnects. */
  service(): ShapeService | null
  /** Why there is no engine for the connected database, when it cannot follow it. */
  unavailable(): string | null
  serverName: string
  log(line: string): void
}

/** Longer request targets get 414 (legacy GET subsets with big filters: use POST). */
export const MAX_URL_LENGTH = 8192

/** Handles everything under /v1/: the shape endpoint, health, the debug inventory and CORS preflight. */
export function createShapeApi(options: ShapeApiOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const names = protocolHeaderNames(options.brand)
  const catchUpCache = catchUpCacheControl(options.cache)
  const sseCache = sseCacheControl(options.live.sseLifetime)
  return async (req, res) => {
    // Prefixed, not resolved against a base: `//v1/shape` must stay a path, not become a host.
    const url = new URL(`http://localhost${req.url ?? '/'}`)
    // `/v1/%73hape`, `/v1//shape`, `/v1/shape/` all name `/v1/shape`: auth and routing use this one form.
    const path = routingPath(url.pathname, { trailingSlash: 'drop' })
    const r = new Responder(req, res, names, path, options.serverName)
    const method = req.method ?? 'GET'
    const gate = checkHostAndOrigin(
      req,
      options.hosts,
      hasTokenHeader(req, options.appToken) ? () => true : options.originAllowed
    )
    if (!gate.ok) return r.forbidden({ code: gate.code, message: gate.message })
    if ((req.url ?? '').length > MAX_URL_LENGTH) {
      return r.json(414, {
        message: `The URL is longer than ${MAX_URL_LENGTH} characters: send subset parameters in the body of a POST /v1/shape instead`
      })
    }
    if (path === '/v1/health' && (method === 'GET' || method === 'HEAD')) return health(r, options)
    if (path === DEBUG_SHAPES_PATH) return serveDebugShapes(r, url.searchParams, options)
    if (path === '/v1/debug/commit-times' && method === 'GET') return commitTimes(r, options, url.searchParams)
    if (path !== '/v1/shape') return r.json(404, { message: 'Not found' })
    if (method === 'OPTIONS') return r.send(204, preflightHeaders(req), null)
    if (!['GET', 'HEAD', 'POST', 'DELETE'].includes(method))
      return r.json(
        405,
        { message: `${method} is not allowed on /v1/shape` },
        { allow: 'GET, HEAD, POST, DELETE, OPTIONS' }
      )
    if (options.secret !== undefined && !secretMatches(url.searchParams, options.secret)) return r.unauthorized()
    const service = options.service()
    if (!service)
      return r.unavailable(
        options.unavailable() ?? 'The shape server is starting, please retry',
        options.unavailable() ? 60 : 1
      )
    const cancellation = new Cancellation()
    res.on('close', () => cancellation.cancel())
    let input: ResolvedShape['input'] | null = null
    try {
      if (method === 'DELETE') return await deleteShape(r, service, url.searchParams)
      const body: BodyResult = method === 'POST' ? await readJsonBody(req) : { ok: true, value: null }
      if (!body.ok) return r.json(body.status, body.error)
      const subset = subsetOf(url.searchParams, body.value)
      const query = body.value ? mergeBody(url.searchParams, body.value) : url.searchParams
      const request = parseShapeRequest(query)
      input = request.input
      const definition = await service.resolve(request.input)
      const terms: AnswerTerms = {
        names,
        live: request.live,
        cursor: request.cursor,
        longPollTimeout: options.live.longPollTimeout,
        noCache: method === 'POST',
        catchUpCache,
        sseCache
      }
      const ask: LogRequest = { r, request, definition, terms, settings: options.live, cancellation }
      if (subset) return await serveSubset(service, ask, subset)
      return await serveLog(service, ask).catch((error: unknown) => refetchIfGone(service, ask, error))
    } catch (error) {
      if (error instanceof ShapeDamagedError) return damaged(r, service, error, input)
      return failure(r, options, error)
    }
  }
}

/** A shape found damaged while it was read is dropped; the request gets 409 pointing at a fresh one. */
async function damaged(
  r: Responder,
  service: ShapeService,
  error: ShapeDamagedError,
  input: ResolvedShape['input'] | null
): Promise<void> {
  await service.dropDamaged(error)
  if (r.res.headersSent) {
    r.res.end()
    return
  }
  const fresh = input ? await service.shapeFor(await service.resolve(input)).catch(() => null) : null
  r.mustRefetch(fresh)
}

/** Body keys that are not subset keys fill in query parameters the URL lacks (the URL wins). */
function mergeBody(query: URLSearchParams, body: Record<string, unknown>): URLSearchParams {
  const merged = new URLSearchParams(query)
  for (const [key, value] of Object.entries(body)) {
    if ((SUBSET_FIELDS as readonly string[]).includes(key) || key === 'subset') continue
    if (!merged.has(key) && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'))
      merged.set(key, String(value))
  }
  return merged
}

/**
 * 200 `active` only while the server follows Postgres and its logs are durable; otherwise 202 `starting`, or 503
 * `waiting` (for Postgres), `stalled` (its own writes fail, e.g. a full disk) or `unavailable`, with the reason.
 */
function health(r: Responder, options: ShapeApiOptions): void {
  const noStore = { 'cache-control': 'no-cache, no-store, must-revalidate' }
  const service = options.service()
  const reason = options.unavailable()
  if (!service) {
    if (reason) return r.json(503, { status: 'unavailable', message: reason }, noStore)
    return r.json(
      202,
      { status: 'starting', message: 'The shape server is starting' },
      { ...noStore, 'retry-after': '1' }
    )
  }
  const state = service.health()
  if (state.status === 'active') return r.json(200, state, noStore)
  r.json(503, state, { ...noStore, 'retry-after': '5' })
}

/** The workbench's latency source (a Syncscope extension), behind the secret like every shape request. */
function commitTimes(r: Responder, options: ShapeApiOptions, query: URLSearchParams): void {
  if (options.secret !== undefined && !secretMatches(query, options.secret)) return r.unauthorized()
  const service = options.service()
  if (!service) return r.unavailable(options.unavailable() ?? 'The shape server is starting, please retry', 1)
  serveCommitTimes(r, service, query)
}

/** A shape dropped while the request read its files: the client refetches, as from any dropped shape. */
async function refetchIfGone(service: ShapeService, ask: LogRequest, error: unknown): Promise<void> {
  if (!(error instanceof ShapeGoneError) || ask.r.res.headersSent) throw error
  ask.r.mustRefetch(await replacement(service, ask.definition))
}

/** DELETE /v1/shape: 202 once the shape's files are gone, also for a shape being dropped already (any phase). */
async function deleteShape(r: Responder, service: ShapeService, query: URLSearchParams): Promise<void> {
  const handle = lastValue(query, 'handle')
  const table = lastValue(query, 'table')
  if (!table && !handle) return r.invalidRequest({ handle: ["can't be blank when shape definition is missing"] })
  const errors: Record<string, string[]> = {}
  const input = shapeInputOf(query, errors)
  if (Object.keys(errors).length > 0) return r.invalidRequest(errors)
  const dropped = (gone: string): void => r.send(202, { [r.names.handle]: gone, 'cache-control': 'no-cache' }, null)
  if (handle && service.isRetiring(handle)) return dropped(handle)
  const shape = table
    ? service.active((await service.resolve(input)).identity)
    : service.shapeByHandle(handle as string)
  if (!shape) return r.json(404, { message: 'No existing shape found' })
  if (handle && shape.handle !== handle) {
    return r.json(400, {
      message:
        'The specified shape definition and handle do not match. Please ensure the shape definition is correct or omit the shape handle from the request to obtain a new one.'
    })
  }
  await service.drop(shape)
  dropped(shape.handle)
}

function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return (
    typeof code === 'string' &&
    (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE)$/.test(code) || code.startsWith('08') || code === '57P01')
  )
}

function failure(r: Responder, options: ShapeApiOptions, error: unknown): void {
  if (r.res.headersSent) {
    r.res.end()
    return
  }
  if (error instanceof InvalidRequestError) return r.invalidRequest(error.errors)
  if (error instanceof TableNotFoundError) return r.invalidRequest({ table: [error.message] })
  if (error instanceof ServiceStoppingError) return r.unavailable(error.message, 1)
  if (error instanceof ShapeTooLargeError) return r.json(413, tooLarge(error).body)
  if (isConnectionError(error))
    return r.json(503, { code: 'database_unreachable', error: 'Database is unreachable' }, { 'retry-after': '10' })
  options.log(`shape request failed: ${(error as Error).stack ?? String(error)}`)
  r.json(500, { error: 'Internal server error' })
}
