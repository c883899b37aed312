import { ShapeStream } from '../../shared/shape-client/client'
import { isMustRefetch } from '../../shared/shape-client/messages'
import { compareOffsets } from '../../shared/shape-client/offsets'
import { ShapeRecorder } from '../../shared/shape-client/recorder'
import { MAX_LOG_MESSAGES, TimeTravelInputError, isUpToDate, positioned, type LogRecord, type ReadLog } from './log'
import { displayUrl, type ShapeTarget } from './shape-url'

/** Retries of a failed request (5xx, network) before following gives up with the failure. */
const MAX_RETRIES = 3
const BACKOFF = { initialDelayMs: 250, maxDelayMs: 2_000, multiplier: 2 }

export interface FollowOptions {
  /** Stop once the log is read past this offset (time travel needs no more). */
  until?: string | null
  /** Told the first response's handle and server header; returning true stops following (the files will be read). */
  onFirstResponse?: (handle: string | null, server: string | null) => boolean
  fetch?: typeof fetch
}

/**
 * Follows a shape from `-1` as a client does (the shared shape client: chained requests, must-refetch restarts,
 * retries), without going live: every message of its log up to the end the server had (or `until`), with the position
 * a client can know for each.
 */
export async function followOverHttp(target: ShapeTarget, options: FollowOptions = {}): Promise<ReadLog | null> {
  const recorder = new ShapeRecorder({ maxBodyChars: 0, maxEntries: 10_000 })
  const stream = new ShapeStream({
    url: target.endpoint,
    params: target.params,
    headers: target.headers,
    log: target.definition.log,
    live: 'off',
    recorder,
    backoff: BACKOFF,
    // a cache in front may hold a catch-up answer that ends the log before its end: read the origin's
    bypassCaches: true,
    fetch: options.fetch
  })
  let records: LogRecord[] = []
  const notes: string[] = []
  let server: string | null = null
  /** Where the response being read started: the previous one's end. */
  let previous = '-1'
  let first = true
  let handedOver = false
  let retries = 0
  let failure: string | null = null
  stream.onState((state) => {
    if (state.phase !== 'retrying' || ++retries <= MAX_RETRIES) return
    const note = recorder.entries.findLast((entry) => entry.type === 'note')
    failure = `${note?.type === 'note' ? note.text.replace(/: retry \d+ in \d+ ms$/, '') : 'requests kept failing'} (${MAX_RETRIES} retries)`
    stream.stop()
  })
  stream.subscribe((batch) => {
    const { offset, handle, brand } = stream.current
    if (first) {
      first = false
      const response = recorder.exchanges.find((exchange) => exchange.request.id === batch.requestId)?.response
      server = response?.headers.find(([name]) => name.toLowerCase() === `${brand}-server`)?.[1] ?? null
      if (options.onFirstResponse?.(handle, server)) {
        handedOver = true
        stream.stop()
        return
      }
    }
    if (batch.messages.some(isMustRefetch)) {
      notes.push(`the server answered must-refetch: followed again from -1${handle ? ` (handle ${handle})` : ''}`)
      records = []
      previous = '-1'
      return
    }
    // one by one: a response may hold more messages than a call's arguments may be
    for (const record of positioned(
      batch.messages.filter((message) => !isUpToDate(message)),
      previous,
      offset
    ))
      records.push(record)
    previous = offset
    if (records.length > MAX_LOG_MESSAGES) {
      failure = `the log has more than ${MAX_LOG_MESSAGES} messages`
      stream.stop()
    } else if (options.until && compareOffsets(offset, options.until) >= 0) stream.stop()
  })
  await stream.start()
  if (handedOver) return null
  const { phase, error, handle, offset } = stream.current
  if (failure) throw new TimeTravelInputError(`${displayUrl(target)}: ${failure}`)
  if (phase === 'failed') throw new TimeTravelInputError(`${displayUrl(target)}: ${error?.message ?? 'failed'}`)
  return {
    source: { kind: 'http', description: displayUrl(target) },
    url: displayUrl(target),
    definition: target.definition,
    handle,
    server,
    records,
    end: offset,
    complete: phase === 'up-to-date',
    notes
  }
}
