import { z } from 'zod'
import { IdentifierError, WhereError, parseTableName } from '../sql'
import { tableKey, type TablePolicy } from './config'
import { authenticate, bindClaims, checkRoles, isPrivileged } from './caller'
import { authorisedWhere } from './column-policy'
import { parseJsonObject, readBodyBytes } from './request-body'
import { allowedOrigin, checkMethod, Refusal, varyOf, type Exchange, type ProxyRuntime } from './runtime'
import {
  canonicalParams,
  canonicaliseShape,
  identifierText,
  readColumnList,
  shapeClaim,
  ShapeDefinitionError,
  tableText,
  type CanonicalShape
} from './shape-definition'
import { grantsFor, queryableColumnsOf, type TableGrants } from './subquery-grants'
import type { Caller } from './tokens'
import { conjoin, parseWhere } from './where-tree'

export const TOKEN_PROXY_PATH = '/proxy/v1/shape'

const GatekeeperRequestSchema = z
  .object({
    where: z.string().min(1).optional(),
    columns: z.union([z.array(z.string().min(1)).min(1), z.string().min(1)]).optional(),
    params: z.union([z.array(z.string()), z.record(z.string(), z.string())]).optional(),
    replica: z.enum(['default', 'full']).optional()
  })
  .strict()

function readGatekeeperRequest(body: Record<string, unknown>): z.output<typeof GatekeeperRequestSchema> {
  const parsed = GatekeeperRequestSchema.safeParse(body)
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`)
      .join('; ')
    throw new Refusal(
      400,
      'invalid_shape_request',
      `the shape request must be {where?, columns?, params?, replica?}: ${problems}`
    )
  }
  return parsed.data
}

function policyFor(runtime: ProxyRuntime, segment: string): { table: string; policy: TablePolicy } {
  try {
    const table = decodeURIComponent(segment)
    const { schema, name } = parseTableName(table)
    const policy = runtime.loaded.tables.get(tableKey(schema, name))
    if (!policy)
      throw new Refusal(403, 'table_not_allowed', `no gatekeeper policy allows table ${tableText({ schema, name })}`)
    return { table, policy }
  } catch (error) {
    if (error instanceof URIError || error instanceof IdentifierError)
      throw new Refusal(400, 'invalid_table', `the table in the path is not a table name: ${(error as Error).message}`)
    throw error
  }
}

/** The shape the gatekeeper grants: the requested one, narrowed to the caller by the policy. */
function grantedShape(
  table: string,
  policy: TablePolicy,
  caller: Caller,
  grants: TableGrants,
  asked: z.output<typeof GatekeeperRequestSchema>
): CanonicalShape {
  const askedParams = Array.isArray(asked.params)
    ? Object.fromEntries(asked.params.map((value, index) => [String(index + 1), value]))
    : (asked.params ?? {})
  const askedColumns = typeof asked.columns === 'string' ? readColumnList(asked.columns) : asked.columns
  const queryable = queryableColumnsOf(
    canonicaliseShape({ table, columns: policy.columns, queryableColumns: policy.queryableColumns })
  )
  const scope = { table, allowed: queryable }
  // parsed once and rebuilt once: checked, joined to the row filter, then canonicalised as the whole
  let where = asked.where ? authorisedWhere(asked.where, askedParams, scope, grants, 'the requested where').tree : null
  const requested = canonicaliseShape({ table, columns: askedColumns, replica: asked.replica })
  const requestedParams = canonicalParams(askedParams, where?.placeholders ?? new Set())
  const allowed = policy.columns ? canonicaliseShape({ table, columns: policy.columns }).columns : null
  if (requested.columns && allowed) {
    const extra = requested.columns.filter((column) => !allowed.includes(column))
    if (extra.length > 0)
      throw new Refusal(
        403,
        'columns_not_allowed',
        `columns ${extra.join(', ')} of ${table} are not allowed; allowed: ${allowed.join(', ')}`
      )
  }
  const filter = policy.rowFilter && !isPrivileged(caller, policy) ? policy.rowFilter : null
  let params = requestedParams
  if (filter) {
    const filterTree = parseWhere(filter.where)
    where = where ? conjoin(filterTree, where, filter.params.length) : filterTree
    const bound = bindClaims(caller, filter.params)
    params = {
      ...bound,
      ...Object.fromEntries(
        Object.entries(requestedParams).map(([key, value]) => [String(Number(key) + filter.params.length), value])
      )
    }
  }
  return canonicaliseShape({
    table,
    columns: requested.columns?.map(identifierText) ?? policy.columns,
    where,
    params,
    replica: requested.replica,
    queryableColumns: policy.queryableColumns
  })
}

/** `POST /gatekeeper/<table>`: authorises the asked shape once and answers stream options holding a shape token. */
export async function gatekeeper(
  runtime: ProxyRuntime,
  request: Request,
  exchange: Exchange,
  segment: string
): Promise<Response> {
  checkMethod(request, ['POST'])
  const caller = await authenticate(runtime, request, exchange)
  const { table, policy } = policyFor(runtime, segment)
  checkRoles(caller, policy.roles, `table ${table}`)
  if (new URL(request.url).search !== '')
    throw new Refusal(
      400,
      'invalid_shape_request',
      'send the shape as a JSON body {where?, columns?, params?, replica?}, not in the query string'
    )
  const asked = readGatekeeperRequest(parseJsonObject(await readBodyBytes(request)))
  let shape: CanonicalShape
  try {
    shape = grantedShape(table, policy, caller, grantsFor(runtime.loaded.tables, caller), asked)
  } catch (error) {
    if (error instanceof WhereError) throw new ShapeDefinitionError(error.param, error.message)
    throw error
  }
  const token = await runtime.tokens.mintShapeToken(caller, shapeClaim(shape))
  const params: Record<string, unknown> = { table: tableText(shape) }
  if (shape.columns) params.columns = shape.columns
  if (shape.where) params.where = shape.where
  if (Object.keys(shape.params).length > 0) params.params = shape.params
  if (shape.replica !== 'default') params.replica = shape.replica
  const lifetime = runtime.loaded.config.gatekeeper.lifetimeSeconds
  const body = {
    url: new URL(
      TOKEN_PROXY_PATH.slice(1),
      runtime.publicUrl.endsWith('/') ? runtime.publicUrl : `${runtime.publicUrl}/`
    ).toString(),
    params,
    headers: { Authorization: `Bearer ${token}` },
    expiresAt: new Date(Date.now() + lifetime * 1000).toISOString()
  }
  const vary = varyOf(runtime)
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
  const origin = allowedOrigin(runtime, request)
  if (origin !== null) {
    headers.set('access-control-allow-origin', origin)
    vary.push('Origin')
  }
  headers.set('vary', vary.join(', '))
  return new Response(JSON.stringify(body), { status: 200, headers })
}
