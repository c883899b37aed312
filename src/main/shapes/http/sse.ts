import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { type LogOffset, compareOffsets, formatOffset, readPosition } from '../storage/offset'
import type { Shape } from '../storage/shape'
import type { LogSlice } from '../storage/shape-log'
import { CACHE_CONTROL, upToDateMessage } from './protocol'
import { PARALLEL_FROM, descriptorOf, parallelWrites, writeToSockets } from './parallel-writes'
import { hasNews, shapeHeaders } from './live-answer'
import type { LiveSettings, LogRequestContext } from './serve-log'

/**
 * SSE bytes built once and written to every stream that shares them: `wire` is the payload as one HTTP/1.1 chunk
 * (`<size in hex>\r\n<payload>\r\n`), what a chunked response's socket gets; `payload` is the frames alone.
 */
export class SseBytes {
  readonly wire: Buffer
  readonly payload: Buffer

  constructor(payload: Buffer) {
    const head = `${payload.length.toString(16)}\r\n`
    this.wire = Buffer.allocUnsafe(head.length + payload.length + 2)
    this.wire.write(head, 0, 'latin1')
    payload.copy(this.wire, head.length)
    this.wire.write('\r\n', head.length + payload.length, 'latin1')
    this.payload = this.wire.subarray(head.length, head.length + payload.length)
  }
}

const KEEP_ALIVE = new SseBytes(Buffer.from(': keep-alive\n\n'))
const DATA = Buffer.from('data: ')
const NEWLINE = 10

/** `data: <json>\n\n` per message of the slice, then (at the log's end) an up-to-date carrying the slice's LSN. */
export function sseFrames(slice: LogSlice, upToDate: boolean): SseBytes {
  const { lines } = slice
  let count = 1
  for (let at = lines.indexOf(NEWLINE); at !== -1; at = lines.indexOf(NEWLINE, at + 1)) count += 1
  const tail = upToDate ? Buffer.from(`data: ${upToDateMessage(slice.end.tx)}\n\n`) : null
  const payload = Buffer.allocUnsafe(lines.length + 1 + count * (DATA.length + 1) + (tail?.length ?? 0))
  let written = 0
  let start = 0
  for (;;) {
    const end = lines.indexOf(NEWLINE, start)
    const stop = end === -1 ? lines.length : end
    written += DATA.copy(payload, written)
    written += lines.copy(payload, written, start, stop)
    payload[written++] = NEWLINE
    payload[written++] = NEWLINE
    if (end === -1) break
    start = end + 1
  }
  if (tail) tail.copy(payload, written)
  return new SseBytes(payload)
}

/** A stream whose socket holds more unsent bytes than this reads on alone, at its own pace, after a drain. */
const SLOW_STREAM_BYTES = 1024 * 1024
/** How often a hub with no change re-registers with its shape. */
const HUB_RECHECK_MS = 60_000
/**
 * Each stream sends its keep-alive up to this share of the interval early (its own share, at random), so that streams
 * that got one change at the same moment do not all need a comment in the same instant; no gap exceeds the interval.
 */
const KEEP_ALIVE_SPREAD = 0.05

/**
 * One open SSE response. It writes the hub's shared bytes straight to its socket as chunks of the chunked response
 * Node started (one socket write, no per-response stream work: how one change reaches ten thousand streams quickly);
 * where the response has no socket of its own yet, Node's `write` frames them. One timer per stream sends the
 * keep-alive comment when nothing went out for `sseKeepAlive`, and ends the stream at its lifetime.
 */
class SseStream {
  group: SseGroup | null = null
  private lastSent = Date.now()
  private readonly keepAliveAfter: number
  private timer: NodeJS.Timeout | null = null
  private ended = false
  private readonly stopListening: () => void
  /** The connection, when the response owns it and is chunked: the hub's bytes go straight to it. */
  private readonly socket: Socket | null
  /** The socket's descriptor, read when the stream opens: it costs a call into libuv, which a change should not wait for. */
  private readonly fd: number | null

  constructor(
    private readonly res: ServerResponse,
    private readonly live: LiveSettings,
    private readonly deadline: number,
    cancellation: LogRequestContext['cancellation'],
    private readonly finished: () => void
  ) {
    this.socket = res.socket && res.chunkedEncoding ? res.socket : null
    this.fd = this.socket && descriptorOf(this.socket)
    this.keepAliveAfter = Math.round(live.sseKeepAlive * (1 - KEEP_ALIVE_SPREAD * Math.random()))
    this.stopListening = cancellation.onCancel(() => this.end())
    this.schedule()
  }

  send(bytes: SseBytes, now: number): void {
    if (this.socket) this.socket.write(bytes.wire)
    else this.res.write(bytes.payload)
    this.lastSent = now
  }

  /** The socket and its descriptor, when bytes may go to it directly: the response owns it and nothing is queued on it. */
  get direct(): { socket: Socket; fd: number } | null {
    const { socket, fd } = this
    if (!socket || fd === null || socket.destroyed || socket.writableLength > 0) return null
    return { socket, fd }
  }

  /** Bytes went to `direct` (see writeToSockets). */
  sentDirectly(now: number): void {
    this.lastSent = now
  }

  /** Bytes written but not yet taken by the client's connection. */
  get backlog(): number {
    return this.res.socket?.writableLength ?? this.res.writableLength
  }

  /** Resolves once the connection took what was written (or went away). */
  drained(): Promise<void> {
    const socket = this.res.socket
    if (!socket || socket.writableLength === 0 || this.ended) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        socket.off('drain', done)
        socket.off('close', done)
        resolve()
      }
      socket.on('drain', done)
      socket.on('close', done)
    })
  }

  private schedule(): void {
    const due = Math.min(this.lastSent + this.keepAliveAfter, this.deadline)
    this.timer = setTimeout(() => this.tick(), Math.max(0, due - Date.now()))
  }

  private tick(): void {
    const now = Date.now()
    if (now >= this.deadline) return this.end()
    if (now - this.lastSent >= this.keepAliveAfter) this.send(KEEP_ALIVE, now)
    this.schedule()
  }

  get done(): boolean {
    return this.ended
  }

  end(): void {
    if (this.ended) return
    this.ended = true
    if (this.timer) clearTimeout(this.timer)
    this.stopListening()
    this.group?.members.delete(this)
    this.group = null
    this.res.end()
    this.finished()
  }
}

/** Streams at one position of a shape's log, served together. */
class SseGroup {
  readonly members = new Set<SseStream>()

  constructor(public from: LogOffset) {}

  add(stream: SseStream): void {
    stream.group = this
    this.members.add(stream)
  }
}

/**
 * The SSE streams of one shape, grouped by their position in its log. A group that is caught up waits (idle) for the
 * shape's next change; a change sends each idle group what follows its position, read and framed once for all of its
 * members. A group goes on reading, slice after slice, until it reaches the log's end — it checks the log again after
 * every read, so a change that lands meanwhile is never left for the next wake-up.
 */
class SseHub {
  private readonly idle = new Map<string, SseGroup>()
  private listening = false
  /** Streams of the shape open now (counted as they open and end: nothing per change). */
  open = 0

  constructor(private readonly shape: Shape) {}

  add(stream: SseStream, from: LogOffset): void {
    const group = new SseGroup(from)
    group.add(stream)
    void this.run(group)
  }

  private park(group: SseGroup): void {
    const key = formatOffset(group.from)
    const existing = this.idle.get(key)
    if (existing) for (const member of group.members) existing.add(member)
    else this.idle.set(key, group)
    if ((existing ?? group).members.size >= PARALLEL_FROM) parallelWrites.start()
    this.listen()
  }

  private listen(): void {
    if (this.listening) return
    this.listening = true
    this.shape.onChange(() => {
      this.listening = false
      this.wake()
    }, HUB_RECHECK_MS)
  }

  private wake(): void {
    for (const [key, group] of this.idle) {
      if (group.members.size > 0 && !hasNews(this.shape, group.from)) continue
      this.idle.delete(key)
      if (group.members.size > 0) void this.run(group)
    }
    if (this.idle.size > 0) this.listen()
  }

  /** Sends the group everything after its position, then parks it at the log's end. */
  private async run(group: SseGroup): Promise<void> {
    const { shape } = this
    for (;;) {
      if (group.members.size === 0) return
      if (shape.invalidated || shape.failure) {
        for (const member of [...group.members]) member.end()
        return
      }
      if (compareOffsets(shape.lastOffset, group.from) <= 0) return this.park(group)
      const slice = shape.tailAfter(group.from) ?? (await shape.readLogAfter(group.from))
      if (!slice || compareOffsets(slice.end, group.from) <= 0) continue
      // up-to-date only where long-poll would say it: at the log's end, which is always a transaction's end
      const bytes = sseFrames(slice, compareOffsets(slice.end, shape.lastOffset) >= 0)
      sendToAll(group.members, bytes)
      group.from = slice.end
      this.splitSlow(group)
    }
  }

  /** Streams whose connection lags go on alone once it has taken what it holds, so no one waits for them. */
  private splitSlow(group: SseGroup): void {
    for (const member of group.members) {
      if (member.backlog <= SLOW_STREAM_BYTES) continue
      group.members.delete(member)
      const alone = new SseGroup(group.from)
      alone.add(member)
      void member.drained().then(() => (member.done ? undefined : this.run(alone)))
    }
  }
}

/** The same bytes to every stream: through each socket, or (for many) straight to the descriptors by two threads. */
function sendToAll(streams: ReadonlySet<SseStream>, bytes: SseBytes): void {
  const now = Date.now()
  if (streams.size < PARALLEL_FROM) {
    for (const stream of streams) stream.send(bytes, now)
    return
  }
  const sockets: Socket[] = []
  const fds: number[] = []
  for (const stream of streams) {
    const direct = stream.direct
    if (direct === null) stream.send(bytes, now)
    else {
      sockets.push(direct.socket)
      fds.push(direct.fd)
      stream.sentDirectly(now)
    }
  }
  writeToSockets(sockets, fds, bytes.wire)
}

const hubs = new WeakMap<Shape, SseHub>()

/** SSE streams of `shape` open now. */
export function openSseStreams(shape: Shape): number {
  return hubs.get(shape)?.open ?? 0
}

function hubOf(shape: Shape): SseHub {
  let hub = hubs.get(shape)
  if (!hub) hubs.set(shape, (hub = new SseHub(shape)))
  return hub
}

/**
 * SSE live mode: the headers go out at once, then everything the log holds after the offset and each later change as
 * it lands, with `: keep-alive` comments when idle, until the stream's lifetime (below the cache max-age) ends, the
 * shape is dropped, or the client goes away. Unlike the reference, a stream that starts behind is not ended once it
 * caught up (the official client counts a stream shorter than a second as a buffering proxy and, after three, gives up
 * on SSE). The headers carry the requested offset: a stream cut before its first up-to-date leaves the client there.
 */
export async function streamSse(
  context: LogRequestContext,
  shape: Shape,
  offset: LogOffset,
  requested: string
): Promise<void> {
  const { r, live, cancellation } = context
  const headers = {
    ...shapeHeaders(context, shape, offset),
    'content-type': 'text/event-stream',
    'cache-control': CACHE_CONTROL.sse,
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    etag: `"${shape.handle}:${requested}:${formatOffset(offset)}"`,
    [r.names.upToDate]: ''
  }
  r.res.writeHead(200, { ...r.baseHeaders(), ...headers })
  r.res.flushHeaders()
  if (r.head || cancellation.cancelled) {
    r.res.end()
    return
  }
  const hub = hubOf(shape)
  hub.open += 1
  await new Promise<void>((resolve) => {
    const ended = (): void => {
      hub.open -= 1
      resolve()
    }
    hub.add(new SseStream(r.res, live, Date.now() + live.sseLifetime, cancellation, ended), readPosition(offset))
  })
}
