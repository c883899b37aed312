import { type LogOffset, compareOffsets, formatOffset } from '../storage/offset'
import type { Shape } from '../storage/shape'
import { nextCursor } from './protocol'
import type { HeaderMap } from './responder'
import type { LogRequestContext } from './log-context'

/** Whether a long-poll at `offset` has something to be answered with: new entries, or its shape gone or failed. */
export const hasNews = (shape: Shape, from: LogOffset): boolean =>
  compareOffsets(shape.lastOffset, from) > 0 || shape.invalidated || shape.failure !== null

/** Headers every answer for a shape carries (also SSE's). */
export function shapeHeaders(context: LogRequestContext, shape: Shape, offset: LogOffset): HeaderMap {
  const { names } = context.r
  const headers: HeaderMap = { [names.handle]: shape.handle, [names.offset]: formatOffset(offset) }
  if (context.request.live)
    headers[names.cursor] = String(nextCursor(context.live.longPollTimeout, context.request.cursor))
  return headers
}
