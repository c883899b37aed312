import type { Evidence } from '../../shared/findings'
import { maskHeaders, maskUrl, type HeaderList } from '../../shared/shape-client/recorder'
import { SseParser, type SseFrame } from '../../shared/shape-client/sse'

const MAX_BODY_CHARS = 4_000
/**
 * The most the checker reads of one body, after decompression: a chunk of the log is a few MB (the reference closes
 * one at 10 MB); a gzip bomb or an endless body stops here instead of filling memory.
 */
export const MAX_BODY_BYTES = 64 * 1024 * 1024
const tooLarge = `more than ${MAX_BODY_BYTES / 1024 / 1024} MiB`

/** One request the checker sends: its params join the target's own (table, credentials); `null` removes one. */
export interface ProbeRequest {
  label: string
  method?: string
  params?: Record<string, string | null>
  headers?: Record<string, string>
  body?: string
  /** Milliseconds before the request is abandoned. */
  timeoutMs?: number
}

/** A complete exchange: the response read to its end. */
export interface Probe {
  evidence: Evidence
  status: number
  headers: Headers
  text: string
  /** The parsed JSON body, undefined when it is not JSON. */
  json: unknown
  headMs: number
  endMs: number
}

const headerList = (headers: Headers): HeaderList => [...headers.entries()]

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function requestEvidence(
  label: string,
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string
): Evidence {
  return {
    label,
    request: {
      method,
      url: maskUrl(url),
      headers: maskHeaders(Object.entries(headers)),
      ...(body !== undefined ? { body } : {})
    },
    response: null
  }
}

function responseEvidence(
  response: Response,
  body: string,
  headMs: number,
  endMs: number | null
): NonNullable<Evidence['response']> {
  return {
    status: response.status,
    headers: headerList(response.headers),
    body: body.slice(0, MAX_BODY_CHARS),
    truncated: body.length > MAX_BODY_CHARS,
    headMs,
    endMs
  }
}

/** Why a request gave no answer to judge: the network, no answer in time, or a body past MAX_BODY_BYTES. */
export type FailureKind = 'network' | 'timeout' | 'too-large'

export class ProbeFailure extends Error {
  constructor(
    readonly evidence: Evidence,
    readonly kind: FailureKind = 'network'
  ) {
    super(evidence.error ?? 'request failed')
  }

  get timedOut(): boolean {
    return this.kind === 'timeout'
  }
}

class BodyTooLarge extends Error {}

/** The body as text, read as it streams in; past MAX_BODY_BYTES (decompressed) it throws BodyTooLarge. */
async function readBody(response: Response): Promise<string> {
  if (!response.body) return ''
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return text + decoder.decode()
    bytes += value.byteLength
    if (bytes > MAX_BODY_BYTES) {
      await reader.cancel()
      throw new BodyTooLarge()
    }
    text += decoder.decode(value, { stream: true })
  }
}

/** What a body past the cap came as: its encoding and its size on the wire, where the head says them. */
function tooLargeError(response: Response): string {
  const encoding = response.headers.get('content-encoding')
  const length = response.headers.get('content-length')
  const wire = [encoding && `content-encoding ${encoding}`, length && `${length} bytes on the wire`].filter(Boolean)
  return `the body is ${tooLarge}${wire.length > 0 ? ` (${wire.join(', ')})` : ''}; the checker stopped reading it`
}

/**
 * A connection closed under a request before any answer: what a keep-alive connection the server closed just as it
 * was reused looks like. Browsers and clients send a safe request again then, once; so does the checker.
 */
function closedUnderUs(error: unknown, method: string): boolean {
  return (
    error instanceof ProbeFailure &&
    error.kind === 'network' &&
    ['GET', 'HEAD', 'OPTIONS'].includes(method) &&
    /ECONNRESET|EPIPE|UND_ERR_SOCKET|other side closed/.test(error.message)
  )
}

/** Runs `attempt`, and once more when the connection was closed under a safe request. */
async function withOneRetry<T>(request: ProbeRequest, attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt()
  } catch (error) {
    if (!closedUnderUs(error, request.method ?? 'GET')) throw error
    return attempt()
  }
}

/** Sends one request and reads the whole answer; a network failure throws ProbeFailure with its evidence. */
export function send(url: string, request: ProbeRequest, headers: Record<string, string>): Promise<Probe> {
  return withOneRetry(request, () => sendOnce(url, request, headers))
}

async function sendOnce(url: string, request: ProbeRequest, headers: Record<string, string>): Promise<Probe> {
  const method = request.method ?? 'GET'
  const evidence = requestEvidence(request.label, url, method, headers, request.body)
  const started = performance.now()
  try {
    const response = await fetch(url, {
      method,
      headers,
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeoutMs ?? 30_000)
    })
    const headMs = performance.now() - started
    let text: string
    try {
      text = await readBody(response)
    } catch (error) {
      if (!(error instanceof BodyTooLarge)) throw error
      evidence.response = responseEvidence(response, '', Math.round(headMs), null)
      evidence.error = tooLargeError(response)
      throw new ProbeFailure(evidence, 'too-large')
    }
    const endMs = performance.now() - started
    evidence.response = responseEvidence(response, text, Math.round(headMs), Math.round(endMs))
    return { evidence, status: response.status, headers: response.headers, text, json: parseJson(text), headMs, endMs }
  } catch (error) {
    if (error instanceof ProbeFailure) throw error
    evidence.error = describeFailure(error, performance.now() - started)
    throw new ProbeFailure(evidence, (error as Error).name === 'TimeoutError' ? 'timeout' : 'network')
  }
}

function describeFailure(error: unknown, ms: number): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  if ((error as Error).name === 'TimeoutError') return `no answer within ${Math.round(ms / 1000)} s`
  if (cause?.code) return `${cause.code}: ${cause.message ?? ''}`.trim()
  return cause?.message ? `${(error as Error).message}: ${cause.message}` : (error as Error).message
}

export interface TimedFrame {
  atMs: number
  frame: SseFrame
}

/**
 * An open response read as an event stream: frames with their arrival times, the end of the stream, and its evidence
 * at any moment. Created once the response head has arrived.
 */
export class OpenStream {
  readonly frames: TimedFrame[] = []
  raw = ''
  endMs: number | null = null
  failure: string | null = null
  /** The stream sent more than MAX_BODY_BYTES: the checker stopped reading it there. */
  tooLarge = false
  readonly ended: Promise<void>
  private readonly waiters = new Set<() => void>()

  constructor(
    private readonly evidenceBase: Evidence,
    readonly response: Response,
    private readonly started: number,
    readonly headMs: number,
    private readonly controller: AbortController
  ) {
    this.ended = this.read()
  }

  private async read(): Promise<void> {
    const parser = new SseParser()
    const decoder = new TextDecoder()
    const push = (frames: SseFrame[]) => {
      const atMs = Math.round(performance.now() - this.started)
      for (const frame of frames) this.frames.push({ atMs, frame })
      for (const waiter of this.waiters) waiter()
    }
    try {
      const reader = (this.response.body as ReadableStream<Uint8Array>).getReader()
      let bytes = 0
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        bytes += value.byteLength
        if (bytes > MAX_BODY_BYTES) {
          this.tooLarge = true
          this.failure = `the stream sent ${tooLarge}; the checker stopped reading it`
          await reader.cancel()
          break
        }
        const text = decoder.decode(value, { stream: true })
        this.raw += text
        push(parser.push(text))
      }
      push(parser.end())
    } catch (error) {
      if (!this.controller.signal.aborted) this.failure = (error as Error).message
    } finally {
      if (!this.controller.signal.aborted) this.endMs = Math.round(performance.now() - this.started)
      for (const waiter of this.waiters) waiter()
    }
  }

  /** Milliseconds since the request was sent. */
  elapsed(): number {
    return performance.now() - this.started
  }

  /** Resolves true once a frame matching `test` arrived, false when the stream ended or `timeoutMs` passed first. */
  waitFor(test: (frame: SseFrame) => boolean, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.frames.some(({ frame }) => test(frame))) finish(true)
        else if (this.endMs !== null || this.failure !== null) finish(false)
      }
      const timer = setTimeout(() => finish(false), timeoutMs)
      const finish = (value: boolean) => {
        clearTimeout(timer)
        this.waiters.delete(check)
        resolve(value)
      }
      this.waiters.add(check)
      check()
    })
  }

  /** Resolves true when the stream ends within `timeoutMs`. */
  async waitForEnd(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)))
    const ended = await Promise.race([this.ended.then(() => true as const), timeout])
    clearTimeout(timer)
    return ended
  }

  close(): void {
    this.controller.abort()
  }

  evidence(): Evidence {
    return {
      ...this.evidenceBase,
      response: responseEvidence(this.response, this.raw, Math.round(this.headMs), this.endMs),
      frames: this.frames.map(({ atMs, frame }) => ({ atMs, raw: frame.raw })),
      ...(this.failure ? { error: this.failure } : {})
    }
  }
}

/** Sends a request and returns once its head has arrived, leaving the body to stream. */
export function open(url: string, request: ProbeRequest, headers: Record<string, string>): Promise<OpenStream> {
  return withOneRetry(request, () => openOnce(url, request, headers))
}

async function openOnce(url: string, request: ProbeRequest, headers: Record<string, string>): Promise<OpenStream> {
  const method = request.method ?? 'GET'
  const evidence = requestEvidence(request.label, url, method, headers, request.body)
  const controller = new AbortController()
  const started = performance.now()
  const headTimer = setTimeout(() => controller.abort(new Error('timeout')), request.timeoutMs ?? 30_000)
  try {
    const response = await fetch(url, {
      method,
      headers,
      body: request.body,
      redirect: 'manual',
      signal: controller.signal
    })
    clearTimeout(headTimer)
    return new OpenStream(evidence, response, started, performance.now() - started, controller)
  } catch (error) {
    clearTimeout(headTimer)
    evidence.error = controller.signal.aborted
      ? `no response head within ${Math.round((performance.now() - started) / 1000)} s`
      : describeFailure(error, performance.now() - started)
    throw new ProbeFailure(evidence, controller.signal.aborted ? 'timeout' : 'network')
  }
}
