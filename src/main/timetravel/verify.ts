import type {
  LogAnomaly,
  RowDivergence,
  RowOrigin,
  VerifiedShape,
  VerifyReport
} from '../../shared/contract/timetravel'
import type { Row } from '../../shared/shape-client/messages'
import { type RecordingInput, RecordingInputError, readRecording } from '../doctor/input'
import { alignWithLog, streamAnomalies } from './align'
import { isBundleText, openBundle, type OpenedBundle } from './bundle'
import { clientStreams, type ClientStream } from './client-stream'
import { findShapeFolder, readShapeFolder } from './local-files'
import { followOverHttp } from './follow-http'
import { TimeTravelInputError, countThrough, type ReadLog } from './log'
import { normaliseRow, readOnly, readShapeRows, resolveShape, type PostgresRows } from './postgres'
import { Replay, columnsDiffering, replayThrough } from './replay'
import { describeOrigins } from '../../shared/timetravel-text'

export interface VerifyOptions {
  /** Postgres to compare with now; null: a bundle's own rows. */
  databaseUrl: string | null
  /** The local shape server's data folder, whose log files are read. */
  dataDir: string | null
  /** Follow the shape's log again over HTTP even where the local server's files are at hand. */
  overHttp?: boolean
  /** Sent when a shape's log is followed again over HTTP (the recording's credentials may be masked). */
  params?: Record<string, string>
  headers?: Record<string, string>
  fetch?: typeof fetch
}

/** Anomalies and rows listed at most per shape (a hostile recording could otherwise make a report of millions). */
const LISTED = 1_000

const showRow = (row: Row | null, columns: readonly string[]): string =>
  row ? columns.map((column) => `${column}=${JSON.stringify(row[column] ?? null)}`).join(' ') : 'no row'

/** The log the client's stream is compared with: a bundle's, the local files, or the service's log followed again. */
async function logFor(
  stream: ClientStream,
  bundle: OpenedBundle | null,
  options: VerifyOptions
): Promise<{ log: ReadLog | null; note: string | null }> {
  if (bundle)
    return {
      log: bundle.log.handle === stream.handle ? bundle.log : null,
      note:
        bundle.log.handle === stream.handle
          ? null
          : `the bundle's log is of handle ${bundle.log.handle}, the recording's of ${stream.handle}`
    }
  if (stream.handle && options.dataDir && !options.overHttp && stream.server?.startsWith('Syncscope/')) {
    const dir = findShapeFolder(options.dataDir, stream.handle)
    if (dir) return { log: await readShapeFolder(dir), note: null }
  }
  try {
    const target = {
      ...stream.target,
      params: { ...stream.target.params, ...options.params },
      headers: { ...options.headers }
    }
    const log = await followOverHttp(target, { fetch: options.fetch })
    if (log && log.handle === stream.handle) return { log, note: null }
    return {
      log: null,
      note: `the service now serves handle ${log?.handle ?? 'none'} for this shape, not the recording's ${stream.handle}: the log the client followed is gone`
    }
  } catch (error) {
    if (!(error instanceof TimeTravelInputError)) throw error
    return { log: null, note: `the shape's log could not be read again: ${error.message}` }
  }
}

interface Sides {
  stream: ClientStream
  log: ReadLog | null
  postgres: PostgresRows
  anomalies: LogAnomaly[]
}

/** The log's message that took the row out, while it is out. */
const logRemoval = (replay: Replay, key: string): RowOrigin[] => {
  const removal = replay.removals.get(key)
  return removal && !replay.shape.rows.has(key) ? [removal] : []
}

/** Why one row differs from Postgres: the anomalies of its messages, the log's word on it, or its own messages. */
function divergence(
  sides: Sides,
  client: Replay,
  atEnd: Replay | null,
  full: Replay | null,
  key: string
): RowDivergence | null {
  const bools = new Set(sides.postgres.boolColumns)
  const clientRow = client.shape.rows.get(key) ?? null
  const c = clientRow && normaliseRow(bools, clientRow)
  const p = sides.postgres.rows.get(key) ?? null
  const l = atEnd ? (atEnd.shape.rows.get(key) ?? null) : null
  const same = (a: Row | null, b: Row | null) =>
    a === null ? b === null : b !== null && columnsDiffering(a, b).length === 0
  if (same(c, p)) return null
  const columns = c && p ? columnsDiffering(c, p) : Object.keys(c ?? p ?? {})
  const origins = client.origins.get(key) ?? (client.removals.get(key) ? [client.removals.get(key) as RowOrigin] : [])
  const base = { key, client: c, postgres: p, log: l && normaliseRow(bools, l), columns, origins }
  const kind = !c ? ('missing' as const) : !p ? ('extra' as const) : ('different' as const)
  const writer = sides.postgres.writtenBy.get(key)
  const inPostgres = p
    ? `Postgres has ${showRow(p, columns)}${writer ? ` (written by transaction ${writer})` : ''}`
    : 'Postgres has no such row'
  // the anomalies of its own messages, and of the log's messages that made the row there (a move event has no key)
  const logMessages = new Set(
    atEnd ? [...(atEnd.origins.get(key) ?? []), ...logRemoval(atEnd, key)].map((origin) => origin.index) : []
  )
  const own = sides.anomalies.filter((anomaly) => anomaly.entry.key === key || logMessages.has(anomaly.entry.index))
  if (own.length > 0)
    return {
      ...base,
      kind,
      cause: `${own.map((anomaly) => `${anomaly.kind}: ${anomaly.text}`).join('; ')} — the client has ${showRow(c, columns)}, ${inPostgres}`
    }
  if (!atEnd || !full)
    return {
      ...base,
      kind,
      cause: `the client has ${showRow(c, columns)} (made by ${describeOrigins(origins)}), ${inPostgres}; the server's log could not be read to tell when it changed`
    }
  if (!same(c, l && normaliseRow(bools, l)))
    return {
      ...base,
      kind,
      cause: `the client has ${showRow(c, columns)} (made by ${describeOrigins(origins)}), but the log at ${sides.stream.lastOffset} has ${
        l
          ? `${showRow(l, columns)} (made by ${describeOrigins(atEnd.origins.get(key) ?? [])})`
          : `no row${logRemoval(atEnd, key)
              .map((removal) => ` (taken out by the ${removal.operation} at ${removal.offset})`)
              .join('')}`
      }`
    }
  const later = full.origins.get(key)?.filter((origin) => origin.index >= atEnd.applied) ?? []
  const removedLater = full.removals.get(key)
  const laterMessages = [...later, ...(removedLater && removedLater.index >= atEnd.applied ? [removedLater] : [])]
  const f = full.shape.rows.get(key) ?? null
  if (laterMessages.length > 0 && same(f && normaliseRow(bools, f), p))
    return {
      ...base,
      kind: 'changed-since',
      cause: `changed after the recording ended: ${describeOrigins(laterMessages)}`
    }
  const should = p
    ? `the ${c ? 'update' : 'insert'} that makes it so should have come and did not`
    : 'the delete should have come and did not'
  return {
    ...base,
    kind,
    cause: `the server's log (to ${sides.log?.end ?? '?'}) has ${showRow(f, columns)} as the client does; ${inPostgres}: ${should}`
  }
}

function compareShape(
  stream: ClientStream,
  log: ReadLog | null,
  logNote: string | null,
  postgres: PostgresRows
): VerifiedShape {
  const anomalies = log ? alignWithLog(stream, log.records) : streamAnomalies(stream.records)
  const definition = stream.target.definition
  const client = new Replay(definition.log)
  client.apply(stream.records, 0)
  const atEnd = log ? replayThrough(log, countWithin(log, stream.lastOffset)) : null
  const full = log ? replayThrough(log, log.records.length) : null
  const sides: Sides = { stream, log, postgres, anomalies }
  const keys = new Set([...client.shape.rows.keys(), ...postgres.rows.keys()])
  const rows: RowDivergence[] = []
  for (const key of keys) {
    // a changes_only client holds only what changed while it followed: rows it never heard of are not missing
    if (definition.log === 'changes_only' && !client.shape.rows.has(key) && !client.removals.has(key)) continue
    const row = divergence(sides, client, atEnd, full, key)
    if (row) rows.push(row)
  }
  const faults = anomalies.length > 0 || rows.some((row) => row.kind !== 'changed-since')
  return {
    url: stream.url,
    definition,
    handle: stream.handle,
    requests: stream.requests.length,
    received: stream.records.length,
    lastOffset: stream.lastOffset,
    log: log ? log.source : { kind: 'none', description: logNote ?? 'no log read' },
    counts: { client: client.shape.rows.size, postgres: postgres.rows.size, log: atEnd ? atEnd.shape.rows.size : null },
    anomalies: anomalies.slice(0, LISTED),
    rows: rows.slice(0, LISTED),
    verdict: faults ? 'diverged' : rows.length > 0 ? 'changed-since' : 'equal',
    notes: [
      ...stream.notes,
      ...(log?.notes ?? []),
      ...(logNote && log ? [logNote] : []),
      ...(anomalies.length > LISTED
        ? [`${anomalies.length} messages not as the log has them; the first ${LISTED} are listed`]
        : []),
      ...(rows.length > LISTED ? [`${rows.length} rows differ; the first ${LISTED} are listed`] : [])
    ]
  }
}

/** The log's records up to the client's last position (a position past its end takes all of it). */
function countWithin(log: ReadLog, offset: string): number {
  try {
    return countThrough(log, offset)
  } catch {
    return log.records.length
  }
}

export function readInput(name: string, text: string): { input: RecordingInput; bundle: OpenedBundle | null } {
  if (isBundleText(text)) {
    const bundle = openBundle(name, text)
    if (!bundle.recording) throw new TimeTravelInputError(`${name} holds no recording to verify`)
    return { input: bundle.recording.input, bundle }
  }
  try {
    return { input: readRecording(text), bundle: null }
  } catch (error) {
    if (error instanceof RecordingInputError) throw new TimeTravelInputError(error.message)
    throw error
  }
}

/**
 * A client's rows, as a recording shows it received them and as the official client (TanStack DB's rules for subquery
 * shapes) materialises them, compared with the server's log up to where the client was, and with Postgres now.
 */
export async function verifyRecording(name: string, text: string, options: VerifyOptions): Promise<VerifyReport> {
  const { input, bundle } = readInput(name, text)
  return verifyInput(name, input, bundle, options)
}

/** verifyRecording of a recording already read (and of the bundle it came in, whose log and rows are used). */
export async function verifyInput(
  name: string,
  input: RecordingInput,
  bundle: OpenedBundle | null,
  options: VerifyOptions
): Promise<VerifyReport> {
  const all = clientStreams(input)
  // a bundle's rows are its own shape's: without a database, only its clients can be compared
  const streams = bundle && !options.databaseUrl ? all.filter((stream) => stream.handle === bundle.log.handle) : all
  if (streams.length === 0)
    throw new TimeTravelInputError(
      all.length === 0
        ? `${name} holds no shape requests (none carries protocol headers or asks for an offset): record while the app syncs`
        : `the recording in ${name} has no client of the bundle's shape (handle ${bundle?.log.handle})`
    )
  const logs = await Promise.all(streams.map((stream) => logFor(stream, bundle, options)))
  let readAt: string
  let rowsOf: PostgresRows[]
  if (options.databaseUrl) {
    const url = options.databaseUrl
    rowsOf = await readOnly(url, async (client) => {
      const read: PostgresRows[] = []
      for (const stream of streams)
        read.push(await readShapeRows(client, await resolveShape(client, stream.target.definition)))
      return read
    })
    readAt = rowsOf[0]?.readAt ?? new Date().toISOString()
  } else if (bundle?.postgres) {
    rowsOf = streams.map(() => bundle.postgres as PostgresRows)
    readAt = bundle.postgres.readAt
  } else throw new TimeTravelInputError('give the Postgres to compare with (--database URL)')
  const shapes = streams.map((stream, index) => {
    const { log, note } = logs[index] as { log: ReadLog | null; note: string | null }
    return compareShape(stream, log, note, rowsOf[index] as PostgresRows)
  })
  return {
    source: { kind: bundle ? 'bundle' : input.kind, name },
    postgres: { kind: options.databaseUrl ? 'database' : 'bundle', readAt },
    shapes,
    verdict: shapes.some((shape) => shape.verdict === 'diverged') ? 'diverged' : 'equal',
    notes: streams.length > 1 ? [`${streams.length} shapes in this recording; each is verified on its own`] : []
  }
}
