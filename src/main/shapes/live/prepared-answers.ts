import { type LogOffset, formatOffset } from '../storage/offset'

/** A whole 200 answer, headers flattened, ready to be written again (see Responder.sendPrepared). */
export interface PreparedAnswer {
  headers: string[]
  body: Buffer
  /** The answer as the bytes of a complete HTTP/1.1 response, for the second whose Date it carries (and Keep-Alive). */
  wire?: { date: string; keepAlive: string; bytes: Buffer }
}

const MAX_PREPARED_ANSWERS = 64

/**
 * Answers built for a shape's current log end, shared by identical requests (see http/serve-log). They hold only while
 * the log ends where it did when they were built: the first look after an append finds them gone.
 */
export class PreparedAnswers {
  private end = ''
  private byKey = new Map<string, PreparedAnswer>()

  get(logEnd: LogOffset, key: string, build: () => PreparedAnswer): PreparedAnswer {
    const end = formatOffset(logEnd)
    if (this.end !== end || this.byKey.size >= MAX_PREPARED_ANSWERS) {
      this.end = end
      this.byKey = new Map()
    }
    const existing = this.byKey.get(key)
    if (existing) return existing
    const prepared = build()
    this.byKey.set(key, prepared)
    return prepared
  }
}
