import { placeholderValues, readClientParams } from './request-params'
import { checkMethod, forwardShape, Refusal, type Exchange, type ProxyRuntime } from './runtime'
import {
  canonicaliseShape,
  readColumnList,
  shapeDifferences,
  shapeFromClaim,
  ShapeDefinitionError,
  type CanonicalShape
} from './shape-definition'
import { AuthError, bearerToken } from './tokens'

/** The shape a request to the token-checking proxy asks for, read from its query. */
function requestedShape(shapeParams: Map<string, string>): CanonicalShape {
  const table = shapeParams.get('table')
  if (table === undefined) throw new Refusal(400, 'missing_table', 'table is required')
  const replica = shapeParams.get('replica') ?? 'default'
  if (replica !== 'default' && replica !== 'full') throw new ShapeDefinitionError('replica', 'must be default or full')
  const columns = shapeParams.get('columns')
  return canonicaliseShape({
    table,
    columns: columns === undefined ? null : readColumnList(columns),
    where: shapeParams.get('where'),
    params: placeholderValues(shapeParams),
    replica
  })
}

/** `GET|POST /proxy/v1/shape`: forwards the shape a valid shape token grants, when the request asks for exactly that shape. */
export async function tokenProxy(runtime: ProxyRuntime, request: Request, exchange: Exchange): Promise<Response> {
  checkMethod(request, ['GET', 'POST'])
  const token = bearerToken(request, { ...runtime.loaded.config.auth, header: true, cookie: undefined })
  if (token === null)
    throw new AuthError(
      'missing_credentials',
      'send the shape token the gatekeeper issued: Authorization: Bearer <token>'
    )
  const { caller, shape: claim } = await runtime.tokens.verifyShapeToken(token)
  exchange.subject = caller.subject
  let granted: CanonicalShape
  try {
    granted = shapeFromClaim(claim)
  } catch {
    throw new AuthError('invalid_token', 'the token has no valid shape claim')
  }
  const { protocol, shape } = readClientParams(new URL(request.url).searchParams, 'read')
  const differences = shapeDifferences(granted, requestedShape(shape))
  if (differences.length > 0)
    throw new Refusal(
      403,
      'shape_mismatch',
      `the request's ${differences.join(', ')} differ from the shape the token grants`
    )
  return forwardShape(runtime, request, exchange, granted, caller, protocol)
}
