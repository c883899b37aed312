import { z } from 'zod'
import type { BundleSummary, LogSourceKind } from '../../shared/contract/timetravel'
import { ShapeLogInfoSchema } from '../../shared/contract/timetravel'
import { MessageSchema, RowSchema } from '../../shared/shape-client/messages'
import { type RecordingInput, RecordingInputError, readRecording } from '../doctor/input'
import { redactDocument } from '../doctor/redact'
import { MAX_LOG_MESSAGES, TimeTravelInputError, type ReadLog } from './log'
import type { PostgresRows } from './postgres'

export const BUNDLE_FORMAT = 'syncscope-bundle'
/** Largest bundle read (a 1M-message log with its rows is well within). */
export const MAX_BUNDLE_CHARS = 200_000_000

/**
 * A repro bundle: one shape's log as it was read (local files or over HTTP), a recording of a client of it, and the
 * rows Postgres held for it, with secrets masked as `syncscope doctor --redact` masks them. Opened read-only anywhere:
 * time travel reads its log, verify its recording against its rows, the tracer its messages.
 */
const BundleSchema = z.object({
  format: z.literal(BUNDLE_FORMAT),
  version: z.literal(1),
  createdAt: z.string(),
  createdBy: z.string(),
  log: ShapeLogInfoSchema.pick({
    source: true,
    url: true,
    definition: true,
    handle: true,
    server: true,
    end: true,
    complete: true,
    notes: true
  }).extend({
    records: z
      .array(z.object({ offset: z.string(), exact: z.boolean(), after: z.string().optional(), message: MessageSchema }))
      .max(MAX_LOG_MESSAGES)
  }),
  /** The recording as its file held it (a HAR, or a Syncscope recording). */
  recording: z.unknown().nullable(),
  postgres: z
    .object({
      readAt: z.string(),
      snapshot: z.object({ xmin: z.string(), xmax: z.string(), xipList: z.array(z.string()) }),
      boolColumns: z.array(z.string()),
      rows: z.array(z.object({ key: z.string(), value: RowSchema, writtenBy: z.string() }))
    })
    .nullable()
})
type BundleDocument = z.infer<typeof BundleSchema>

export interface OpenedBundle {
  summary: BundleSummary
  log: ReadLog
  recording: { input: RecordingInput; text: string } | null
  postgres: PostgresRows | null
}

/** A bundle's text, secrets masked: the log as read, the recording (if any), the rows Postgres holds (if read). */
export function writeBundle(
  log: ReadLog,
  recording: { text: string } | null,
  postgres: PostgresRows | null,
  createdBy: string
): string {
  if (recording) readRecording(recording.text)
  const document: BundleDocument = {
    format: BUNDLE_FORMAT,
    version: 1,
    createdAt: new Date().toISOString(),
    createdBy,
    log: { ...log, source: log.source, records: log.records },
    recording: recording ? (JSON.parse(recording.text.replace(/^\uFEFF/, '')) as unknown) : null,
    postgres: postgres && {
      readAt: postgres.readAt,
      snapshot: postgres.snapshot,
      boolColumns: postgres.boolColumns,
      rows: [...postgres.rows].map(([key, value]) => ({ key, value, writtenBy: postgres.writtenBy.get(key) ?? '' }))
    }
  }
  return redactDocument(document)
}

function problem(error: z.ZodError): string {
  const issue = error.issues[0]
  const path = (issue?.path ?? []).map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
  return `${path.join('').replace(/^\./, '') || 'the file'}: ${issue?.message ?? 'unreadable'}`
}

const SOURCE_OF: Record<LogSourceKind, string> = {
  http: 'the log followed over HTTP at',
  'local-files': "the server's files in",
  bundle: 'the log of',
  recording: 'the log of'
}

/** Whether a file's text is a bundle (rather than a recording), from its start. */
export const isBundleText = (text: string): boolean =>
  /^\s*\{\s*"format"\s*:\s*"syncscope-bundle"/.test(text.slice(0, 200))

/** Reads a bundle; TimeTravelInputError naming what is wrong with the file. */
export function openBundle(name: string, text: string): OpenedBundle {
  if (text.length > MAX_BUNDLE_CHARS)
    throw new TimeTravelInputError(`${name} is larger than ${MAX_BUNDLE_CHARS} characters`)
  let json: unknown
  try {
    json = JSON.parse(text.replace(/^\uFEFF/, ''))
  } catch (error) {
    throw new TimeTravelInputError(`${name} is not JSON (${(error as Error).message}): cut short, or not a bundle`)
  }
  const parsed = BundleSchema.safeParse(json)
  if (!parsed.success) throw new TimeTravelInputError(`${name} is not a Syncscope bundle: ${problem(parsed.error)}`)
  const bundle = parsed.data
  let recording: OpenedBundle['recording'] = null
  if (bundle.recording !== null) {
    const recordingText = JSON.stringify(bundle.recording)
    try {
      recording = { input: readRecording(recordingText), text: recordingText }
    } catch (error) {
      if (error instanceof RecordingInputError)
        throw new TimeTravelInputError(`the recording in ${name} is damaged: ${error.message}`)
      throw error
    }
  }
  const postgres = bundle.postgres && {
    rows: new Map(bundle.postgres.rows.map((row) => [row.key, row.value])),
    writtenBy: new Map(bundle.postgres.rows.map((row) => [row.key, row.writtenBy])),
    boolColumns: bundle.postgres.boolColumns,
    readAt: bundle.postgres.readAt,
    snapshot: bundle.postgres.snapshot
  }
  return {
    summary: {
      name,
      createdAt: bundle.createdAt,
      createdBy: bundle.createdBy,
      recording: recording && { kind: recording.input.kind, exchanges: recording.input.exchanges.length },
      postgres: bundle.postgres && { readAt: bundle.postgres.readAt, rows: bundle.postgres.rows.length }
    },
    log: {
      ...bundle.log,
      source: {
        kind: 'bundle',
        description: `the bundle ${name} (made ${bundle.createdAt}, of ${SOURCE_OF[bundle.log.source.kind]} ${bundle.log.source.description})`
      }
    },
    recording,
    postgres
  }
}
