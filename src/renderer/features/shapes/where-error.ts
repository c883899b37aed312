import type { ShapeStreamError } from '../../../shared/shape-client'

export interface WhereError {
  message: string
  /** 0-based position in the where text, when the server gave one. */
  position: number | null
}

/** Length of `SELECT 1 WHERE `, the prefix the server parses a where clause inside. */
const WRAPPER_LENGTH = 15

/**
 * The server's complaint about `where`, from its 400 body `{"errors":{"where":["At location N: …"]}}`. Syntax errors
 * count N in the wrapped statement; other errors count it in the where text itself.
 */
export function whereErrorOf(error: ShapeStreamError | null, where: string): WhereError | null {
  if (!error || error.status !== 400) return null
  const body = error.json as { errors?: { where?: unknown } } | null
  const messages = body?.errors?.where
  const message = Array.isArray(messages)
    ? messages.find((item): item is string => typeof item === 'string')
    : typeof messages === 'string'
      ? messages
      : undefined
  if (!message) return null
  const match = /^At location (\d+): /.exec(message)
  if (!match) return { message, position: null }
  const location = Number(match[1])
  const position = /syntax error/i.test(message) ? location - WRAPPER_LENGTH : location
  return { message: message.slice(match[0].length), position: Math.min(Math.max(position, 0), where.length) }
}
