import { checkedResponse } from '../../net/checked-response'
import type { FetchLike } from '../auth/oauth-log'
import { McpFailure } from '../errors'

/**
 * The most one JSON-RPC message from a server may take: a stdio line, an SSE event, or a JSON answer. The SDK's stdio
 * reader stops at the same size, with an error that names no server; ours comes first.
 */
export const MAX_MCP_MESSAGE_BYTES = 10 * 1024 * 1024

const LF = 10
const CR = 13

export const messageTooLarge = (server: string, limit = MAX_MCP_MESSAGE_BYTES): McpFailure =>
  new McpFailure(
    'transport_error',
    `${server} sent a message larger than ${limit / (1024 * 1024)} MiB: refused, and its connection closed`
  )

/** Bytes of the newline-delimited message being received (stdio): false once one passes `limit`. */
export function lineMessages(limit = MAX_MCP_MESSAGE_BYTES): (chunk: Uint8Array) => boolean {
  let pending = 0
  return (chunk) => {
    const newline = chunk.lastIndexOf(LF)
    pending = newline < 0 ? pending + chunk.byteLength : chunk.byteLength - newline - 1
    return pending <= limit
  }
}

/**
 * Bytes of the server-sent event being received, all its lines (the parser joins them until a blank line): false
 * once one passes `limit`. Lines end in LF, CR or CRLF.
 */
export function eventMessages(limit = MAX_MCP_MESSAGE_BYTES): (chunk: Uint8Array) => boolean {
  let event = 0
  let line = 0
  let afterCr = false
  return (chunk) => {
    for (const byte of chunk) {
      if (byte === LF && afterCr) {
        afterCr = false
        continue
      }
      afterCr = byte === CR
      if (byte === LF || byte === CR) {
        if (line === 0) event = 0
        line = 0
        continue
      }
      line++
      if (++event > limit) return false
    }
    return true
  }
}

/** Bytes of a whole answer: false once they pass `limit`. */
function wholeAnswer(limit: number): (chunk: Uint8Array) => boolean {
  let read = 0
  return (chunk) => (read += chunk.byteLength) <= limit
}

/**
 * A server's answers with each message capped: an event stream by event, any other body whole. Past the cap the body
 * ends with an error naming it, and `refused` is told (the connection closes: the SDK would wait on a stream it
 * reconnects), so a server cannot make us hold an endless message.
 */
export function messageSizeCapped(
  fetch: FetchLike,
  server: string,
  refused: (error: McpFailure) => void,
  limit = MAX_MCP_MESSAGE_BYTES
): FetchLike {
  return async (input, init) => {
    const response = await fetch(input, init)
    const stream = response.headers.get('content-type')?.includes('text/event-stream') ?? false
    const within = stream ? eventMessages(limit) : wholeAnswer(limit)
    return checkedResponse(response, (chunk) => {
      if (within(chunk)) return null
      const error = messageTooLarge(server, limit)
      refused(error)
      return error
    })
  }
}
