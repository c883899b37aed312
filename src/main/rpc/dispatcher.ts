import { type z } from 'zod'
import { calls, isCallName, type CallName, type Calls } from '../../shared/contract'
import { RpcError, type RpcErrorBody } from '../../shared/contract/errors'
import type { CallSpec } from '../../shared/contract/define'

/** What a room provides for its calls: input already validated, output validated on the way out. */
export type HandlersFor<C extends Record<string, CallSpec>> = {
  [N in keyof C]: (input: z.output<C[N]['input']>) => Promise<z.input<C[N]['output']>>
}

export type Handlers = HandlersFor<Calls>

export type DispatchResult = { ok: true; value: unknown } | { ok: false; status: number; body: RpcErrorBody }

export type Dispatch = (name: string, input: unknown) => Promise<DispatchResult>

const failure = (
  status: number,
  code: string,
  message: string,
  extra: Partial<RpcErrorBody['error']> = {}
): DispatchResult => ({
  ok: false,
  status,
  body: { error: { code, message, ...extra } }
})

/** The one dispatcher both transports use: unknown call → 404, bad input → 400 naming the fields, handler errors → JSON. */
export function createDispatcher(
  handlers: Handlers,
  onInternalError: (name: string, error: unknown) => void
): Dispatch {
  return async (name, input) => {
    if (!isCallName(name)) return failure(404, 'unknown_call', `unknown call '${name}'`)
    const spec = calls[name] as CallSpec
    const parsed = spec.input.safeParse(input ?? {})
    if (!parsed.success) {
      const issues = parsed.error.issues.map((issue) => ({
        path: issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
        message: issue.message
      }))
      const summary = issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')
      return failure(400, 'invalid_input', `invalid input for '${name}': ${summary}`, { issues })
    }
    try {
      const handler = handlers[name as CallName] as (input: unknown) => Promise<unknown>
      return { ok: true, value: spec.output.parse(await handler(parsed.data)) }
    } catch (error) {
      if (error instanceof RpcError)
        return failure(400, error.code, error.message, error.details ? { details: error.details } : {})
      onInternalError(name, error)
      return failure(500, 'internal_error', `'${name}' failed: ${(error as Error).message}`)
    }
  }
}
