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

/** Raised while evaluating a row where Postgres would raise an error (division by zero, overflow, bad cast input). */
export class WhereRuntimeError extends Error {
  override readonly name = 'WhereRuntimeError'
}
