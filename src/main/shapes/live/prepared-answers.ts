import { formatOffset } from '../storage/offset'
import type { Shape } from '../storage/shape'

/** A whole 200 answer, headers flattened, ready to be written again (see Responder.sendPrepared). */
export interface PreparedAnswer {
  headers: string[]
  body: Buffer
  /** The answer as the bytes of a complete HTTP/1.1 response, for the second whose Date it carries (and Keep-Alive). */
  wire?: { date: string; keepAlive: string; bytes: Buffer }
}

const MAX_PREPARED_ANSWERS = 64

/** A shape's answers, all built while its log ended at `end`. */
interface Answers {
  end: string
  byKey: Map<string, PreparedAnswer>
}

const answers = new WeakMap<Shape, Answers>()

/**
 * Answers built for a shape's current log end, shared by identical requests (see serve-log). They hold only while the
 * log ends where it did when they were built: the first look after an append finds them gone.
 */
export function preparedAnswer(shape: Shape, key: string, build: () => PreparedAnswer): PreparedAnswer {
  const end = formatOffset(shape.lastOffset)
  let current = answers.get(shape)
  if (!current || current.end !== end || current.byKey.size >= MAX_PREPARED_ANSWERS) {
    current = { end, byKey: new Map() }
    answers.set(shape, current)
  }
  const existing = current.byKey.get(key)
  if (existing) return existing
  const prepared = build()
  current.byKey.set(key, prepared)
  return prepared
}
