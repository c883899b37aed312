import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import { StringDecoder } from 'node:string_decoder'
import type { Transform } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { SseParser } from '../../shared/shape-client/sse'

/**
 * Longest body text kept per exchange, SSE frames included, counted after decompression: past it nothing more of the
 * body is decompressed or parsed. The bytes themselves always pass through whole.
 */
export const MAX_BODY_CHARS = 2_000_000
/** SSE frames kept per exchange (with their arrival times); the body text goes on to MAX_BODY_CHARS. */
export const MAX_FRAMES = 20_000
/** The recording keeps the latest exchanges within both bounds; older ones leave the HAR file. */
export const MAX_ENTRIES = 10_000
export const MAX_RECORDED_CHARS = 100_000_000

interface HarHeader {
  name: string
  value: string
}

export interface HarEntry {
  startedDateTime: string
  time: number
  request: {
    method: string
    url: string
    httpVersion: string
    headers: HarHeader[]
    queryString: HarHeader[]
    cookies: []
    headersSize: -1
    bodySize: number
    postData?: { mimeType: string; text: string }
  }
  response: {
    status: number
    statusText: string
    httpVersion: string
    headers: HarHeader[]
    cookies: []
    /** `_truncated`: the text (and frames) stop at MAX_BODY_CHARS. */
    content: { size: number; mimeType: string; text: string; _truncated?: true }
    redirectURL: ''
    headersSize: -1
    bodySize: number
    _error?: string
  }
  cache: Record<string, never>
  timings: { send: number; wait: number; receive: number }
  _frames: Array<{ atMs: number; raw: string }>
}

export const headerList = (headers: IncomingHttpHeaders): HarHeader[] =>
  Object.entries(headers).flatMap(([name, value]) =>
    value === undefined ? [] : (Array.isArray(value) ? value : [value]).map((item) => ({ name, value: item }))
  )

/** A HAR entry for a request about to be forwarded to `target`, its response still to come. */
export function newEntry(req: IncomingMessage, target: URL, started: number): HarEntry {
  return {
    startedDateTime: new Date(started).toISOString(),
    time: 0,
    request: {
      method: req.method ?? 'GET',
      url: target.toString(),
      httpVersion: `HTTP/${req.httpVersion}`,
      headers: headerList(req.headers),
      queryString: [...target.searchParams].map(([name, value]) => ({ name, value })),
      cookies: [],
      headersSize: -1,
      bodySize: 0
    },
    response: {
      status: 0,
      statusText: '',
      httpVersion: 'HTTP/1.1',
      headers: [],
      cookies: [],
      content: { size: 0, mimeType: '', text: '' },
      redirectURL: '',
      headersSize: -1,
      bodySize: 0
    },
    cache: {},
    timings: { send: 0, wait: -1, receive: -1 },
    _frames: []
  }
}

function decoderFor(encoding: string): Transform | null {
  if (encoding === 'gzip' || encoding === 'x-gzip') return createGunzip()
  if (encoding === 'deflate') return createInflate()
  if (encoding === 'br') return createBrotliDecompress()
  return null
}

/** Characters an entry's body and frames take in the recording. */
const recordedChars = (entry: HarEntry): number =>
  entry.response.content.text.length +
  (entry.request.postData?.text.length ?? 0) +
  entry._frames.reduce((sum, frame) => sum + frame.raw.length, 0)

/**
 * Records a response body into its entry as it passes: decompressed (gzip, deflate, br) and, for an event stream, cut
 * into frames with their arrival times, up to MAX_BODY_CHARS; past that the decompression stops (a small compressed
 * body cannot make the tap inflate gigabytes) and the content is marked `_truncated`.
 */
export class BodyRecorder {
  private readonly decoder: Transform | null
  private readonly text = new StringDecoder('utf8')
  private readonly parser = new SseParser()
  private chars = 0
  private full = false
  private readonly decoded: Promise<void>

  constructor(
    private readonly entry: HarEntry,
    private readonly started: number,
    contentEncoding: string,
    private readonly sse: boolean
  ) {
    this.decoder = decoderFor(contentEncoding.toLowerCase())
    const decoder = this.decoder
    this.decoded = decoder
      ? new Promise((resolve) => {
          decoder.on('data', (chunk: Buffer) => this.record(chunk))
          decoder.once('end', () => (this.record(null), resolve())).once('close', resolve)
          // a body that is not what its content-encoding says is recorded as far as it decoded
          decoder.on('error', () => resolve())
        })
      : Promise.resolve()
  }

  write(chunk: Buffer): void {
    if (this.full || this.decoder?.destroyed) return
    if (this.decoder) this.decoder.write(chunk)
    else this.record(chunk)
  }

  /** The body ended: resolves once what was still being decompressed is recorded. */
  end(): Promise<void> {
    if (!this.full && !this.decoder?.destroyed) {
      this.decoder?.end()
      if (!this.decoder) this.record(null)
    }
    return this.decoded
  }

  private record(chunk: Buffer | null): void {
    if (this.full) return
    const text = chunk ? this.text.write(chunk) : this.text.end()
    const room = MAX_BODY_CHARS - this.chars
    const kept = text.length > room ? text.slice(0, room) : text
    this.chars += kept.length
    const content = this.entry.response.content
    content.text += kept
    const frames = this.entry._frames
    if (this.sse && frames.length < MAX_FRAMES)
      for (const frame of this.parser.push(kept).slice(0, MAX_FRAMES - frames.length))
        frames.push({ atMs: Date.now() - this.started, raw: frame.raw })
    if (text.length <= room) return
    this.full = true
    content._truncated = true
    this.decoder?.destroy()
  }
}

/** The exchanges the tap recorded, latest last, within MAX_ENTRIES and MAX_RECORDED_CHARS. */
export class TapRecording {
  readonly entries: HarEntry[] = []
  private chars = 0
  private droppedAny = false

  constructor(private readonly log: (line: string) => void) {}

  add(entry: HarEntry): void {
    this.entries.push(entry)
    this.chars += recordedChars(entry)
    while (this.entries.length > MAX_ENTRIES || (this.chars > MAX_RECORDED_CHARS && this.entries.length > 1)) {
      const oldest = this.entries.shift() as HarEntry
      this.chars -= recordedChars(oldest)
      if (!this.droppedAny)
        this.log(
          `tap: the recording keeps the latest ${MAX_ENTRIES} exchanges and ${MAX_RECORDED_CHARS / 1_000_000} million characters of bodies; older exchanges leave it`
        )
      this.droppedAny = true
    }
  }

  toJson(): string {
    return JSON.stringify(
      { log: { version: '1.2', creator: { name: 'syncscope tap', version: '1' }, entries: this.entries } },
      null,
      1
    )
  }
}
