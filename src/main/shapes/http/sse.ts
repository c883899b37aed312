import { type LogOffset, formatOffset } from '../offset'
import type { Shape } from '../shape'
import type { LogSlice } from '../shape-log'
import { CACHE_CONTROL, upToDateMessage } from './protocol'
import { type LogRequestContext, shapeHeaders } from './serve-log'

/** `data: <json>\n\n` per message, then an up-to-date carrying the batch's LSN (clients resume from `<lsn>_0`). */
function frames(slice: LogSlice): string {
  const lines = slice.lines.toString('utf8').split('\n')
  return `${lines.map((line) => `data: ${line}\n\n`).join('')}data: ${upToDateMessage(slice.end.tx)}\n\n`
}

/**
 * SSE live mode: data that is already there is sent and the response ends; otherwise the stream stays open,
 * pushing each batch as it lands, with `: keep-alive` comments when idle, until its lifetime (below the cache
 * max-age) ends, the shape is dropped, or the client goes away.
 */
export async function streamSse(context: LogRequestContext, shape: Shape, offset: LogOffset, requested: string): Promise<void> {
  const { r, live, cancellation } = context
  const waiting = await shape.readLogAfter(offset)
  const headers = {
    ...shapeHeaders(context, shape, waiting?.end ?? offset),
    'content-type': 'text/event-stream',
    'cache-control': CACHE_CONTROL.sse,
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    etag: `"${shape.handle}:${requested}:${formatOffset(waiting?.end ?? offset)}"`,
    [r.names.upToDate]: ''
  }
  r.res.writeHead(200, { ...r.baseHeaders(), ...headers })
  r.res.flushHeaders()
  if (waiting) {
    r.res.end(frames(waiting))
    return
  }
  const deadline = Date.now() + live.sseLifetime
  let lastSent = Date.now()
  let position = offset
  while (!cancellation.cancelled && !shape.invalidated && Date.now() < deadline) {
    const quietUntil = lastSent + live.sseKeepAlive
    await shape.nextChange(Math.max(0, Math.min(quietUntil, deadline) - Date.now()), cancellation)
    const slice = await shape.readLogAfter(position)
    if (slice) {
      r.res.write(frames(slice))
      position = slice.end
      lastSent = Date.now()
    } else if (Date.now() >= quietUntil && Date.now() < deadline) {
      r.res.write(': keep-alive\n\n')
      lastSent = Date.now()
    }
  }
  r.res.end()
}
