export type WhereParam = 'where' | 'params' | `params[${number}]` | 'order_by'

/** A rejected `where`, `params` or `order_by`; `position` is 1-based into the user's text. */
export class WhereError extends Error {
  override readonly name = 'WhereError'
  readonly position: number | undefined
  readonly param: WhereParam
  /** Raised by the Postgres parser itself (a syntax error), not by the type checker. */
  readonly fromParser: boolean

  constructor(message: string, param: WhereParam = 'where', position?: number, fromParser = false) {
    super(message)
    this.param = param
    this.position = position
    this.fromParser = fromParser
  }
}

/**
 * An error Postgres raised while evaluating what the caller sent (its where, its table): SQLSTATE classes 22 (data
 * exception: division by zero, a bad cast), 42 (syntax or access rule) and 54 (program limit: too complex). The caller's
 * to fix, so a 400, never a 5xx that a client would retry forever.
 */
export function isCallersQueryError(error: unknown): error is Error & { code: string } {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^(22|42|54)[0-9A-Z]{3}$/.test(code)
}

/** Raised while evaluating a row where Postgres would raise an error (division by zero, overflow, bad cast input). */
export class WhereRuntimeError extends Error {
  override readonly name = 'WhereRuntimeError'
}
