import { CONTROL } from '../protocol'
import { errorForStatus, ShapeStreamError } from './errors'
import { isMustRefetch, isUpToDate, type ControlMessage, type Message } from './messages'
import { readProtocolHeaders, type ProtocolHeaders } from './protocol-headers'
import { now, utf8Length, type HeaderList, type LiveMode, type ShapeRecorder } from './recorder'
import { messageOffset, parseMessage, parseMessages } from './response-body'
import { SseParser } from './sse'
import type { Answer, ShapeStreamState, StreamEvent } from './stream-state'

/** What reading a response needs of its stream. */
export interface ResponseContext {
  recorder: ShapeRecorder
  state(): ShapeStreamState
  /** An SSE stream's progress, as it comes. */
  feed(event: StreamEvent): void
  /** What an SSE stream delivered after its last up-to-date, when it ends. */
  publish(batch: { messages: Message[]; requestId: number }): void
}

interface Read {
  requestId: number
  url: string
  response: Response
  headers: HeaderList
  live: LiveMode
}

const SSE_TEXT_KEPT = 1_000_000

/** Reads one response: its messages, a must-refetch, an SSE stream to its end, or an HTTP error. */
export async function readResponse(context: ResponseContext, read: Read): Promise<Answer> {
  const { requestId, url, response, live } = read
  const protocol = readProtocolHeaders(response.headers, context.state().brand)
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream') && response.ok) {
    return readSse(context, requestId, url, response, protocol)
  }
  const text = await readText(context, requestId, response)
  if (response.status === 409) {
    const messages = parseMessages(text, url, 'the 409 body')
    messages.forEach((message) => context.recorder.message(requestId, message, null))
    return mustRefetch(protocol.handle, messages, requestId)
  }
  if (!response.ok)
    return {
      kind: 'http-error',
      error: errorForStatus(url, response.status, text, read.headers),
      retryAfter: response.headers.get('retry-after')
    }
  if (response.status === 204) {
    // Older servers' empty live answer: caught up, nothing new (the official client still accepts it).
    const upToDate: ControlMessage = { headers: { control: CONTROL.upToDate } }
    return { kind: 'messages', messages: [upToDate], headers: protocol, requestId }
  }
  const checked = requireHeaders(url, protocol, live)
  const messages = parseMessages(text, url, 'the response body')
  messages.forEach((message) => context.recorder.message(requestId, message, messageOffset(message) ?? checked.offset))
  const refetchAt = messages.findIndex(isMustRefetch)
  if (refetchAt !== -1) return mustRefetch(checked.handle, messages.slice(refetchAt), requestId)
  return { kind: 'messages', messages, headers: checked, requestId }
}

/** Like the official client: a 2xx needs handle and offset; a live one its cursor; a non-live one its schema. */
function requireHeaders(url: string, headers: ProtocolHeaders, live: LiveMode): ProtocolHeaders {
  const missing = [
    !headers.handle && 'handle',
    !headers.offset && 'offset',
    live !== 'off' && headers.cursor === null && 'cursor',
    live === 'off' && headers.schema === null && 'schema'
  ].filter((name): name is string => Boolean(name))
  if (missing.length > 0) {
    const names = missing.map((name) => `${headers.brand ?? '<brand>'}-${name}`).join(', ')
    throw new ShapeStreamError('protocol', `the response lacks the protocol header(s) ${names}`, url)
  }
  return headers
}

/**
 * The body as text. Not through `arrayBuffer()`: a ~10 MB chunk's bytes would stay in an ArrayBuffer as long as V8
 * puts off its next full collection (in the workbench's worker after a million-row sync, ~60 MiB of them).
 */
async function readText(context: ResponseContext, requestId: number, response: Response): Promise<string> {
  const text = await response.text()
  context.recorder.body(requestId, text, utf8Length(text))
  return text
}

async function readSse(
  context: ResponseContext,
  requestId: number,
  url: string,
  response: Response,
  protocol: ProtocolHeaders
): Promise<Answer> {
  context.feed({ kind: 'sse-opened', headers: requireHeaders(url, protocol, 'sse') })
  const openedAt = now()
  const parser = new SseParser()
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  let pending: Message[] = []
  let deliveredChanges = false
  const onFrames = (frames: ReturnType<SseParser['push']>): Answer | null => {
    for (const frame of frames) {
      context.recorder.sseFrame(requestId, frame)
      if (frame.kind === 'comment') continue
      const message = parseMessage(frame.data, url)
      context.recorder.message(requestId, message, messageOffset(message))
      if (isMustRefetch(message)) return mustRefetch(context.state().handle, [message], requestId)
      pending.push(message)
      if (!isUpToDate(message)) continue
      deliveredChanges ||= pending.length > 1
      context.feed({ kind: 'sse-caught-up', upToDate: message, messages: pending, requestId })
      pending = []
    }
    return null
  }
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      const chunk = done ? decoder.decode() : decoder.decode(value, { stream: true })
      // The recorder keeps the start of a body; a stream open for hours must not grow without bound.
      if (text.length < SSE_TEXT_KEPT) text += chunk
      size += value?.byteLength ?? 0
      context.recorder.body(requestId, text, size)
      const outcome = onFrames(done ? [...parser.push(chunk), ...parser.end()] : parser.push(chunk))
      if (outcome) return outcome
      if (done) break
    }
  } finally {
    reader.releaseLock()
  }
  if (pending.length > 0) context.publish({ messages: pending, requestId })
  return { kind: 'sse-ended', durationMs: now() - openedAt, deliveredChanges }
}
/** A must-refetch answer: the stream starts again with a new cache-buster. */
export const mustRefetch = (
  handle: string | null,
  messages: Message[],
  requestId: number
): Extract<Answer, { kind: 'must-refetch' }> => ({
  kind: 'must-refetch',
  handle,
  messages,
  requestId,
  cacheBuster: Math.random().toString(36).slice(2)
})
