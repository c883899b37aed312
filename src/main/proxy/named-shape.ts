import type { NamedShapeConfig } from './config'
import { authenticate, bindClaims, checkRoles, isPrivileged } from './caller'
import { readClientParams } from './request-params'
import { checkMethod, forwardShape, Refusal, type Exchange, type ProxyRuntime } from './runtime'
import type { CanonicalShape } from './shape-definition'
import type { Caller } from './tokens'

/** Proxy auth: `GET|POST /api/shapes/<name>`, the shape set by the config and scoped to the caller. */
export async function namedShape(
  runtime: ProxyRuntime,
  request: Request,
  exchange: Exchange,
  name: string
): Promise<Response> {
  checkMethod(request, ['GET', 'POST'])
  const entry = runtime.loaded.shapes.get(name)
  if (!entry) throw new Refusal(404, 'unknown_shape', `no shape named ${name} is configured`)
  const caller = await authenticate(runtime, request, exchange)
  checkRoles(caller, entry.config.roles, `shape ${name}`)
  const { protocol } = readClientParams(new URL(request.url).searchParams, 'forbidden')
  return forwardShape(runtime, request, exchange, scopedShape(entry.shape, entry.config, caller), caller, protocol)
}

/** A named shape for this caller: the row filter bound to their claims, or none for a privileged role. */
function scopedShape(shape: CanonicalShape, config: NamedShapeConfig, caller: Caller): CanonicalShape {
  if (isPrivileged(caller, config)) return { ...shape, where: null, params: {} }
  return { ...shape, params: bindClaims(caller, config.rowFilter?.params ?? []) }
}
