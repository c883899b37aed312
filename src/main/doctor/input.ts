import { z } from 'zod'
import { RecordingSchema } from '../../shared/doctor-recording'

export type HeaderList = Array<[string, string]>

/** One HTTP exchange read from a HAR file or a recording, before the doctor interprets it. */
export interface RawExchange {
  /** Milliseconds since the epoch. */
  startedAt: number
  method: string
  url: string
  requestHeaders: HeaderList
  requestBody: string | null
  /** null when no response came. */
  status: number | null
  responseHeaders: HeaderList
  body: string | null
  truncated: boolean
  headMs: number | null
  endMs: number | null
  /** SSE frames with their arrival after the request was sent, where the recording has them. */
  frames: Array<{ atMs: number; raw: string }>
  /** The browser answered from its own cache (Chrome's `_fromCache`). */
  browserCache: 'memory' | 'disk' | null
  /** Why no response came; null with `status` null: still waiting when the recording ended. */
  error: string | null
}

export interface RecordingInput {
  kind: 'har' | 'recording'
  creator: string | null
  exchanges: RawExchange[]
}

/** A file the doctor cannot read: the message names the problem (the CLI exits 2, the contract answers 400). */
export class RecordingInputError extends Error {}

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/), as Chrome, Firefox and Playwright really write it: unknown
// and `_`-prefixed fields kept, -1 for unknown times, status 0 for requests that got no answer.
const HarHeaderSchema = z.looseObject({ name: z.string(), value: z.string() })
const HarTime = z.number().nullish()
const HarEntrySchema = z.looseObject({
  startedDateTime: z.string().refine((text) => !Number.isNaN(Date.parse(text)), 'is not a date'),
  time: HarTime,
  request: z.looseObject({
    method: z.string(),
    url: z.string().url(),
    headers: z.array(HarHeaderSchema).default([]),
    postData: z.looseObject({ text: z.string().optional() }).optional()
  }),
  response: z.looseObject({
    status: z.number().int(),
    statusText: z.string().optional(),
    headers: z.array(HarHeaderSchema).default([]),
    content: z
      .looseObject({
        text: z.string().optional(),
        encoding: z.string().optional(),
        /** Syncscope's tap: the text stops at its limit. */
        _truncated: z.boolean().optional()
      })
      .optional(),
    _error: z.string().nullish(),
    _failureText: z.string().nullish()
  }),
  timings: z
    .looseObject({
      blocked: HarTime,
      dns: HarTime,
      connect: HarTime,
      ssl: HarTime,
      send: HarTime,
      wait: HarTime,
      receive: HarTime
    })
    .optional(),
  _fromCache: z.string().optional(),
  /** Syncscope's tap: SSE frames with their arrival after the request was sent. */
  _frames: z.array(z.object({ atMs: z.number(), raw: z.string() })).optional()
})
const HarSchema = z.object({
  log: z.looseObject({
    version: z.string().optional(),
    creator: z.looseObject({ name: z.string().optional(), version: z.string().optional() }).optional(),
    entries: z.array(HarEntrySchema)
  })
})

const known = (value: number | null | undefined): number => (typeof value === 'number' && value > 0 ? value : 0)

/** The first few problems, each with where it is in the file (`log.entries[3].request.url: …`). */
function problems(error: z.ZodError): string {
  const lines = error.issues.slice(0, 3).map((issue) => {
    const path = issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('')
    return `${path.replace(/^\./, '') || 'the file'}: ${issue.message}`
  })
  const more = error.issues.length > 3 ? ` (and ${error.issues.length - 3} more problems)` : ''
  return `${lines.join('; ')}${more}`
}

function fromHar(har: z.infer<typeof HarSchema>): RecordingInput {
  const exchanges = har.log.entries.map((entry): RawExchange => {
    const timings = entry.timings ?? {}
    const beforeHead =
      known(timings.blocked) + known(timings.dns) + known(timings.connect) + known(timings.send) + known(timings.wait)
    const total = typeof entry.time === 'number' && entry.time >= 0 ? entry.time : beforeHead + known(timings.receive)
    const content = entry.response.content
    const text =
      content?.text === undefined
        ? null
        : content.encoding === 'base64'
          ? Buffer.from(content.text, 'base64').toString('utf8')
          : content.text
    // Chrome writes 0, Playwright -1, for a request that got no answer (blocked, aborted, still open at the end).
    const failed = entry.response.status <= 0
    const cache = entry._fromCache === 'memory' || entry._fromCache === 'disk' ? entry._fromCache : null
    return {
      startedAt: Date.parse(entry.startedDateTime),
      method: entry.request.method,
      url: entry.request.url,
      requestHeaders: entry.request.headers.map((header) => [header.name, header.value]),
      requestBody: entry.request.postData?.text ?? null,
      status: failed ? null : entry.response.status,
      responseHeaders: entry.response.headers.map((header) => [header.name, header.value]),
      body: text,
      truncated: content?._truncated === true,
      headMs: failed ? null : Math.round(beforeHead),
      endMs: failed ? null : Math.round(total),
      frames: entry._frames ?? [],
      browserCache: cache,
      error: failed ? (entry.response._error ?? entry.response._failureText ?? null) : null
    }
  })
  const creator = har.log.creator?.name
    ? `${har.log.creator.name}${har.log.creator.version ? ` ${har.log.creator.version}` : ''}`
    : null
  return { kind: 'har', creator, exchanges }
}

function fromRecording(recording: z.infer<typeof RecordingSchema>): RecordingInput {
  const exchanges = recording.exchanges.map(({ request, response, body, failure, frames }): RawExchange => ({
    startedAt: request.at,
    method: request.method,
    url: request.url,
    requestHeaders: request.headers,
    requestBody: null,
    status: response?.status ?? null,
    responseHeaders: response?.headers ?? [],
    body: body?.text ?? null,
    truncated: body?.truncated ?? false,
    headMs: response ? Math.round(response.at - request.at) : null,
    endMs: body ? Math.round(body.at - request.at) : null,
    frames: frames.map((frame) => ({ atMs: Math.round(frame.at - request.at), raw: frame.raw })),
    browserCache: null,
    error: failure?.message ?? null
  }))
  return { kind: 'recording', creator: 'Syncscope', exchanges }
}

/** Reads a HAR file or a Syncscope recording; throws RecordingInputError naming what is wrong with the file. */
export function readRecording(text: string): RecordingInput {
  let json: unknown
  try {
    json = JSON.parse(text.replace(/^\uFEFF/, ''))
  } catch (error) {
    throw new RecordingInputError(
      `the file is not JSON (${(error as Error).message}): a HAR file ("Save all as HAR") or a Syncscope recording is`
    )
  }
  if (typeof json === 'object' && json !== null && 'log' in json) {
    const har = HarSchema.safeParse(json)
    if (!har.success) throw new RecordingInputError(`not a HAR 1.2 file the doctor can read: ${problems(har.error)}`)
    return fromHar(har.data)
  }
  if (typeof json === 'object' && json !== null && (json as { format?: unknown }).format === 'syncscope-recording') {
    const recording = RecordingSchema.safeParse(json)
    if (!recording.success) throw new RecordingInputError(`a damaged Syncscope recording: ${problems(recording.error)}`)
    return fromRecording(recording.data)
  }
  throw new RecordingInputError(
    'neither a HAR file (no `log.entries`) nor a Syncscope recording (no `"format": "syncscope-recording"`)'
  )
}
