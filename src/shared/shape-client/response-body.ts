import { ShapeStreamError } from './errors'
import { MessageArraySchema, MessageSchema, type Message } from './messages'
import { isMessage, isMessageArray } from './message-check'

/** A live change's own log position (`<lsn>_<op_position>`), when the server says it. */
export function messageOffset(message: Message): string | null {
  const { lsn, op_position: position } = message.headers as { lsn?: unknown; op_position?: unknown }
  return typeof lsn === 'string' && typeof position === 'number' ? `${lsn}_${position}` : null
}

function parseJson(text: string, url: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new ShapeStreamError('protocol', `${what} is not JSON: ${text.slice(0, 200)}`, url)
  }
}

/** The body's messages; checked without a copy (isMessageArray), and by the schema only to say what is wrong. */
export function parseMessages(text: string, url: string, what: string): Message[] {
  const value = parseJson(text, url, what)
  if (isMessageArray(value)) return value
  const parsed = MessageArraySchema.safeParse(value)
  if (!parsed.success)
    throw new ShapeStreamError(
      'protocol',
      `${what} is not an array of shape messages: ${parsed.error.issues[0]?.message ?? ''}`,
      url
    )
  return parsed.data
}

export function parseMessage(text: string, url: string): Message {
  const value = parseJson(text, url, 'an SSE data frame')
  if (isMessage(value)) return value
  const parsed = MessageSchema.safeParse(value)
  if (!parsed.success)
    throw new ShapeStreamError('protocol', `an SSE data frame is not a shape message: ${text.slice(0, 200)}`, url)
  return parsed.data
}
