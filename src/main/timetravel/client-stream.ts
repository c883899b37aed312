import { buildTimeline, messagesOf, type ShapeExchange } from '../doctor/timeline'
import type { RecordingInput } from '../doctor/input'
import { CONTROL, offsetAfterLsn } from '../../shared/protocol'
import { MessageSchema, isControlMessage, type Message } from '../../shared/shape-client/messages'
import { compareOffsets, laterOffset } from '../../shared/shape-client/offsets'
import { isUpToDate, positioned, type LogRecord } from './log'
import { displayUrl, parseShapeUrl, type ShapeTarget } from './shape-url'

/** A message the client received: where in the log, and which of the recording's shape requests brought it. */
export interface ReceivedRecord extends LogRecord {
  request: number
  /** A subset snapshot's row (or its snapshot-end): not in the shape's log. */
  subset: boolean
}

/** What one client of one shape received, as a recording shows it: the messages its rows are made of. */
export interface ClientStream {
  /** The shape as the doctor names it (URL without position parameters, credentials masked). */
  shape: string
  url: string
  target: ShapeTarget
  /** The handle of the log the client last followed. */
  handle: string | null
  server: string | null
  /** Shape requests (the doctor's numbers) whose messages the client applied, since its last start from -1. */
  requests: number[]
  records: ReceivedRecord[]
  /** The furthest position of the log the client's stream reached. */
  lastOffset: string
  /** Each applied request's stretch of the log: after `from`, up to `to`. */
  ranges: Array<{ request: number; from: string; to: string }>
  notes: string[]
}

const header = (exchange: ShapeExchange, name: string): string | null =>
  exchange.raw.responseHeaders.find(([key]) => key.toLowerCase() === name)?.[1] ?? null

/** A subset snapshot's answer (`{data, metadata}`): its rows as inserts, then its snapshot-end. */
function subsetMessages(exchange: ShapeExchange): Message[] | null {
  try {
    const body = JSON.parse(exchange.raw.body ?? '') as { data?: unknown; metadata?: unknown }
    if (!Array.isArray(body.data) || typeof body.metadata !== 'object' || body.metadata === null) return null
    const rows = body.data.map((item) => MessageSchema.parse(item))
    return [...rows, { headers: { ...(body.metadata as object), control: CONTROL.snapshotEnd } }]
  } catch {
    return null
  }
}

/** Where a response leaves the client: its offset header, or (SSE) past its last message and up-to-date. */
function responseEnd(exchange: ShapeExchange, messages: readonly Message[]): string {
  let end = exchange.entry.response.offset ?? exchange.entry.request.offset ?? '-1'
  for (const message of messages) {
    const lsn = isControlMessage(message) ? message.headers.global_last_seen_lsn : undefined
    if (exchange.entry.request.live === 'sse' && isUpToDate(message) && lsn) end = laterOffset(end, offsetAfterLsn(lsn))
  }
  return end
}

/** The client streams of a recording: one per shape, from the last time its client started from `-1`. */
export function clientStreams(input: RecordingInput): ClientStream[] {
  const byShape = new Map<string, ShapeExchange[]>()
  for (const exchange of buildTimeline(input.exchanges)) {
    const list = byShape.get(exchange.entry.shape)
    if (list) list.push(exchange)
    else byShape.set(exchange.entry.shape, [exchange])
  }
  return [...byShape.entries()].flatMap(([shape, exchanges]) => {
    const first = exchanges[0] as ShapeExchange
    let target: ShapeTarget
    try {
      target = parseShapeUrl(first.raw.url)
    } catch {
      return []
    }
    return [followClient(shape, target, exchanges)]
  })
}

function followClient(shape: string, target: ShapeTarget, exchanges: ShapeExchange[]): ClientStream {
  const stream: ClientStream = {
    shape,
    url: displayUrl(target),
    target,
    handle: null,
    server: null,
    requests: [],
    records: [],
    lastOffset: '-1',
    ranges: [],
    notes: []
  }
  /** Request offsets already answered with messages since the last start: a repeat is another client's request. */
  let answered = new Set<string>()
  for (const exchange of exchanges) {
    const { entry } = exchange
    const status = entry.status
    if (status === 409 || (entry.request.offset === '-1' && status !== null && status < 300)) {
      stream.records = []
      stream.requests = []
      stream.lastOffset = '-1'
      stream.ranges = []
      answered = new Set()
    }
    if (status === null || status >= 300) continue
    const subset = exchange.raw.method === 'POST' || entry.url.includes('subset__') ? subsetMessages(exchange) : null
    const sse = entry.request.live === 'sse' || /event-stream/.test(header(exchange, 'content-type') ?? '')
    const { messages, unreadable } = subset ? { messages: subset, unreadable: false } : messagesOf(exchange.raw, sse)
    if (unreadable) stream.notes.push(`request #${entry.n}: part of its body could not be read (cut, or not JSON)`)
    const data = messages.filter((message) => !isUpToDate(message))
    const asked = `${entry.request.handle ?? ''}@${entry.request.offset ?? ''}`
    if (data.length > 0 && answered.has(asked) && !subset) {
      stream.notes.push(`request #${entry.n} asks again for ${entry.request.offset}: another client's, not applied`)
      continue
    }
    if (data.length > 0) answered.add(asked)
    const end = responseEnd(exchange, messages)
    stream.handle = entry.response.handle ?? stream.handle
    stream.server = header(exchange, `${exchange.brand ?? 'service'}-server`) ?? stream.server
    stream.requests.push(entry.n)
    if (!subset) stream.ranges.push({ request: entry.n, from: entry.request.offset ?? '-1', to: end })
    for (const record of positioned(data, entry.request.offset ?? '-1', end)) {
      stream.records.push({ ...record, request: entry.n, subset: subset !== null })
      if (compareOffsets(record.offset, stream.lastOffset) > 0) stream.lastOffset = record.offset
    }
    if (!subset && compareOffsets(end, stream.lastOffset) > 0) stream.lastOffset = end
  }
  return stream
}
