import { z } from 'zod'
import type { OnErrorResult } from './client'
import { quoteColumn } from './definition'
import { errorForStatus, ShapeStreamError } from './errors'
import { resolveRecord, type ResolvableRecord } from './resolve'

/** What a gatekeeper answers (`POST /gatekeeper/<table>`): stream options holding a short-lived shape token. */
export const GatekeeperGrantSchema = z.object({
  /** The token-checking proxy's shape endpoint. */
  url: z.url({ protocol: /^https?$/ }),
  params: z.object({
    table: z.string().min(1),
    columns: z.array(z.string().min(1)).optional(),
    where: z.string().optional(),
    params: z.record(z.string(), z.string()).optional(),
    replica: z.enum(['default', 'full']).optional()
  }),
  /** `Authorization: Bearer <shape token>`. */
  headers: z.record(z.string(), z.string()),
  expiresAt: z.iso.datetime()
})
export type GatekeeperGrant = z.infer<typeof GatekeeperGrantSchema>

/** The shape a client asks the gatekeeper for; the table is in the gatekeeper's path. */
export interface GatekeeperShapeRequest {
  where?: string
  /** Identifiers as the shape API reads them (quoted for any spelling but lower case, see `quoteColumn`). */
  columns?: string[]
  /** Values for `$1`, `$2`, … of `where`. */
  params?: Record<string, string>
  replica?: 'default' | 'full'
}

export interface GatekeeperOptions {
  /** The gatekeeper's endpoint for one table, e.g. `http://127.0.0.1:3001/gatekeeper/issues`. */
  url: string
  shape: GatekeeperShapeRequest
  /** The caller's credentials for the gatekeeper (e.g. `authorization` as a function that refreshes the access token). */
  headers: ResolvableRecord
  fetch?: typeof fetch
}

/** A grant's shape as the query parameters of the token-checking proxy: columns quoted, params as `params[n]`. */
export function grantQueryParams(params: GatekeeperGrant['params']): Record<string, string> {
  const query: Record<string, string> = { table: params.table }
  if (params.columns) query.columns = params.columns.map(quoteColumn).join(',')
  if (params.where) query.where = params.where
  for (const [key, value] of Object.entries(params.params ?? {})) query[`params[${key}]`] = value
  if (params.replica && params.replica !== 'default') query.replica = params.replica
  return query
}

/** Asks the gatekeeper for the shape; a refusal is a ShapeStreamError with its status and the gatekeeper's message. */
export async function requestGrant(options: GatekeeperOptions): Promise<GatekeeperGrant> {
  const headers = { ...(await resolveRecord(options.headers)), 'content-type': 'application/json' }
  const response = await (options.fetch ?? globalThis.fetch)(options.url, {
    method: 'POST',
    headers,
    body: JSON.stringify(options.shape)
  })
  const text = await response.text()
  if (!response.ok) {
    const error = errorForStatus(options.url, response.status, text, [...response.headers.entries()])
    throw new ShapeStreamError(
      error.kind,
      `the gatekeeper refused: ${error.message}`,
      options.url,
      response.status,
      text,
      error.headers
    )
  }
  const grant = GatekeeperGrantSchema.safeParse(JSON.parse(text))
  if (!grant.success)
    throw new ShapeStreamError(
      'protocol',
      `the gatekeeper's answer is not stream options: ${grant.error.issues[0]?.message ?? ''}`,
      options.url
    )
  return grant.data
}

/** Stream options for a shape the gatekeeper grants, and the onError that goes back to it when the shape token is refused. */
export interface GatekeeperStreamOptions {
  url: string
  params: Record<string, string>
  headers: Record<string, string>
  grant: GatekeeperGrant
  /** 401 (the shape token expired or is no longer valid): a new grant for the same shape, its headers retried. */
  onError: (error: ShapeStreamError) => Promise<OnErrorResult>
}

/** Goes through the gatekeeper once, and again whenever the token-checking proxy answers 401 mid-stream. */
export async function gatekeeperStreamOptions(
  options: GatekeeperOptions,
  onGrant: (grant: GatekeeperGrant) => void = () => {}
): Promise<GatekeeperStreamOptions> {
  const grant = await requestGrant(options)
  onGrant(grant)
  return {
    url: grant.url,
    params: grantQueryParams(grant.params),
    headers: grant.headers,
    grant,
    async onError(error) {
      if (error.status !== 401) return undefined
      const renewed = await requestGrant(options)
      onGrant(renewed)
      return { headers: renewed.headers }
    }
  }
}
