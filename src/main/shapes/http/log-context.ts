import type { ResolvedShape } from '../definition/definition'
import type { Cancellation } from '../live/cancellation'
import type { ShapeService } from '../service'
import type { Responder } from './responder'
import type { ShapeRequest } from './shape-request'

/** The live settings of the shape API (long-poll timeout, SSE keep-alive and lifetime). */
export interface LiveSettings {
  longPollTimeout: number
  sseKeepAlive: number
  sseLifetime: number
}

/** One shape log request as its handlers see it (serve-log.ts, sse.ts, subset.ts, live-answer.ts). */
export interface LogRequestContext {
  r: Responder
  service: ShapeService
  request: ShapeRequest
  definition: ResolvedShape
  live: LiveSettings
  /** POSTs are never cached. */
  noCache: boolean
  /** cache-control of catch-up answers (catchUpCacheControl of the server's settings). */
  catchUpCache: string
  /** Cancelled when the client goes away. */
  cancellation: Cancellation
}
