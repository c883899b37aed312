import { z } from 'zod'
import { MessageSchema, OperationSchema, RowSchema } from '../shape-client/messages'
import { ShapeInputSchema, type ShapeInput } from '../shape-input'
import { call } from './define'
import { NameValueSchema } from './shapes-workbench'

/**
 * Time travel, verify, the txid tracer and repro bundles (src/main/timetravel/). A shape's log is opened once
 * (`timetravel.open`, `timetravel.openBundle`) and kept in main under a `logId`; the scrubber then asks for the rows at
 * any point of it (`rowsAt`), what changed between two points (`diff`) and the messages themselves (`messages`), each
 * a cheap call on the log already read.
 */

/** A shape's definition as its URL (or its files) give it. */
export const ShapeDefinitionSchema = ShapeInputSchema
export type ShapeDefinition = ShapeInput

/**
 * Where a log was read from: the local server's files, a shape service followed from `-1`, a repro bundle, or what a
 * client received as its recording shows it.
 */
export const LogSourceKindSchema = z.enum(['local-files', 'http', 'bundle', 'recording'])
export type LogSourceKind = z.infer<typeof LogSourceKindSchema>

/** One message of a shape log, as a list shows it. */
export const LogEntrySchema = z.object({
  /** Its place in the log, from 0. */
  index: z.number().int(),
  /**
   * Its position. Exact (`exact`) when the log's files or the message itself say it (`lsn` + `op_position`); otherwise
   * the end of the response that brought it, or of the next message that has one (what a client can know).
   */
  offset: z.string(),
  exact: z.boolean(),
  /** An inexact entry lies after this position, and at or before `offset`. */
  after: z.string().nullable(),
  kind: z.enum(['change', 'control', 'event']),
  operation: OperationSchema.nullable(),
  key: z.string().nullable(),
  /** `snapshot-end`, `must-refetch`… for control messages; `move-in`/`move-out` for events. */
  name: z.string().nullable(),
  txids: z.array(z.number()),
  /** An insert a move-in query read (`is_move_in`). */
  moveIn: z.boolean()
})
export type LogEntry = z.infer<typeof LogEntrySchema>

/** A log as it was read: the shape, where from, and its messages (listed up to a limit). */
export const ShapeLogInfoSchema = z.object({
  logId: z.string(),
  source: z.object({ kind: LogSourceKindSchema, description: z.string() }),
  /** The shape endpoint, credentials masked (null for a log read from files alone). */
  url: z.string().nullable(),
  definition: ShapeDefinitionSchema,
  handle: z.string().nullable(),
  /** The server's `<brand>-server` header, e.g. `Syncscope/0.1.0`. */
  server: z.string().nullable(),
  /** The last position read: the log's end when `complete`. */
  end: z.string(),
  complete: z.boolean(),
  total: z.number().int(),
  /** The first entries of the log (all of them unless `total` is larger). */
  entries: z.array(LogEntrySchema),
  notes: z.array(z.string())
})
export type ShapeLogInfo = z.infer<typeof ShapeLogInfoSchema>

/** A message that made a row what it is at some point of the log. */
export const RowOriginSchema = z.object({
  index: z.number().int(),
  offset: z.string(),
  /** `move-in`: an insert a move-in query read; `move-out`: the event that took the row out (no delete is sent). */
  operation: z.enum(['insert', 'update', 'delete', 'move-in', 'move-out']),
  /** The columns it set (an update's changed columns; every column of an insert). */
  columns: z.array(z.string()),
  txids: z.array(z.number())
})
export type RowOrigin = z.infer<typeof RowOriginSchema>

export const ShapeRowSchema = z.object({
  key: z.string(),
  value: RowSchema,
  /** The messages that made the row, oldest first; for a row changed more often, the first and the latest ones. */
  origins: z.array(RowOriginSchema),
  /** How many messages made it (more than `origins` lists when it was changed very often). */
  originCount: z.number().int()
})
export type ShapeRow = z.infer<typeof ShapeRowSchema>

/** A point of a log: a position (`-1`, `0_0`, `<lsn>_<op>`…), or "after the first `count` messages". */
export const LogPointSchema = z.union([
  z.object({ offset: z.string().min(1).max(100) }),
  z.object({ count: z.number().int().min(0) })
])
export type LogPoint = z.infer<typeof LogPointSchema>

export const RowsAtSchema = z.object({
  /** The point as asked, and how many messages of the log it takes (0: before the first). */
  offset: z.string(),
  count: z.number().int(),
  /** The last message applied, null at the start. */
  last: LogEntrySchema.nullable(),
  /**
   * Messages whose place (over HTTP, a message without a position of its own) may lie on either side of the point:
   * after their `after` yet at or before their `offset`. They are not applied; the local server's files have no such.
   */
  uncertain: z.array(LogEntrySchema),
  rowCount: z.number().int(),
  /** The place of the first row listed among all the rows (a window of them was asked for). */
  start: z.number().int(),
  /** In log order, from `start`, up to the limit asked for. */
  rows: z.array(ShapeRowSchema)
})
export type RowsAt = z.infer<typeof RowsAtSchema>

export const RowChangeKindSchema = z.enum(['added', 'removed', 'changed'])

export const RowDiffSchema = z.object({
  key: z.string(),
  kind: RowChangeKindSchema,
  before: RowSchema.nullable(),
  after: RowSchema.nullable(),
  /** Columns whose value differs (every column of an added or removed row). */
  columns: z.array(z.string()),
  /** The messages between the two points that touched the row. */
  messages: z.array(RowOriginSchema)
})
export type RowDiff = z.infer<typeof RowDiffSchema>

export const ShapeDiffSchema = z.object({
  from: z.string(),
  to: z.string(),
  fromCount: z.number().int(),
  toCount: z.number().int(),
  changeCount: z.number().int(),
  changes: z.array(RowDiffSchema)
})
export type ShapeDiff = z.infer<typeof ShapeDiffSchema>

/** A message of the client's stream that is not as the server's log has it. */
export const LogAnomalySchema = z.object({
  /**
   * `dropped`: in the log, never received; `duplicated`: received more than once; `reordered`: received after a
   * message the log has after it; `altered`: received with other content than the log's message at its position;
   * `unknown`: received, and in no log the verifier could read.
   */
  kind: z.enum(['dropped', 'duplicated', 'reordered', 'altered', 'unknown']),
  /** One line naming the message(s) and where they came (or should have come). */
  text: z.string(),
  entry: LogEntrySchema,
  /** The recording's shape requests concerned (numbered as the doctor's timeline). */
  requests: z.array(z.number().int())
})
export type LogAnomaly = z.infer<typeof LogAnomalySchema>

export const RowDivergenceSchema = z.object({
  key: z.string(),
  /**
   * `missing`: Postgres has the row, the client not; `extra`: the client has it, Postgres not; `different`: column
   * values differ; `changed-since`: differs, but the log after the recording's last position explains it (not a fault).
   */
  kind: z.enum(['missing', 'extra', 'different', 'changed-since']),
  client: RowSchema.nullable(),
  postgres: RowSchema.nullable(),
  /** The row in the server's log at the recording's last position; null when absent there or no log was read. */
  log: RowSchema.nullable(),
  columns: z.array(z.string()),
  /** One line: which message(s) made it so, or which one should have come and did not. */
  cause: z.string(),
  /** The received messages that made the client's row. */
  origins: z.array(RowOriginSchema)
})
export type RowDivergence = z.infer<typeof RowDivergenceSchema>

export const VerifiedShapeSchema = z.object({
  /** The shape's URL as recorded (credentials masked). */
  url: z.string(),
  definition: ShapeDefinitionSchema,
  handle: z.string().nullable(),
  /** Shape requests of the recording the client's rows come from, and the messages they brought. */
  requests: z.number().int(),
  received: z.number().int(),
  /** Where the client's stream ended in the log. */
  lastOffset: z.string(),
  /** The log the client's stream was compared with. */
  log: z.object({ kind: z.union([LogSourceKindSchema, z.literal('none')]), description: z.string() }),
  counts: z.object({ client: z.number().int(), postgres: z.number().int(), log: z.number().int().nullable() }),
  anomalies: z.array(LogAnomalySchema),
  rows: z.array(RowDivergenceSchema),
  /** `equal`: same rows as Postgres; `changed-since`: differences the later log explains; `diverged`: a fault. */
  verdict: z.enum(['equal', 'changed-since', 'diverged']),
  notes: z.array(z.string())
})
export type VerifiedShape = z.infer<typeof VerifiedShapeSchema>

export const VerifyReportSchema = z.object({
  source: z.object({ kind: z.enum(['har', 'recording', 'bundle']), name: z.string() }),
  /** Where the Postgres rows came from: a database read now, or the rows a bundle holds. */
  postgres: z.object({ kind: z.enum(['database', 'bundle']), readAt: z.string() }),
  shapes: z.array(VerifiedShapeSchema),
  verdict: z.enum(['equal', 'diverged']),
  notes: z.array(z.string())
})
export type VerifyReport = z.infer<typeof VerifyReportSchema>

export const TxidReasonSchema = z.enum([
  'where',
  'outside-transaction',
  'changes-only-started-after',
  'compacted',
  'aborted',
  'in-progress',
  'not-delivered',
  'unknown'
])
export type TxidReason = z.infer<typeof TxidReasonSchema>

export const SnapshotCoverSchema = z.object({
  entry: LogEntrySchema,
  xmin: z.string(),
  xmax: z.string(),
  xipList: z.array(z.string()),
  /** The shape's initial snapshot, or a move-in query's. */
  initial: z.boolean()
})

export const TxidShapeSchema = z.object({
  url: z.string().nullable(),
  definition: ShapeDefinitionSchema,
  handle: z.string().nullable(),
  source: z.object({ kind: LogSourceKindSchema, description: z.string() }),
  /** `carried`: messages carry it in `txids`; `covered`: a snapshot already holds its effect; `absent`: neither. */
  verdict: z.enum(['carried', 'covered', 'absent']),
  carriers: z.array(LogEntrySchema),
  cover: SnapshotCoverSchema.nullable(),
  reason: TxidReasonSchema.nullable(),
  /** Why, in lines: the evidence and what could not be known. */
  explanation: z.array(z.string())
})
export type TxidShape = z.infer<typeof TxidShapeSchema>

export const TxidReportSchema = z.object({
  /** As given; `xid`: the 32-bit id messages carry; `xid8`: the full id, when known. */
  txid: z.string(),
  xid: z.number().int(),
  xid8: z.string().nullable(),
  postgres: z
    .object({
      /** pg_xact_status: null when Postgres no longer knows (older than its commit log keeps). */
      status: z.enum(['committed', 'aborted', 'in progress']).nullable(),
      note: z.string()
    })
    .nullable(),
  shapes: z.array(TxidShapeSchema),
  /** `delivered`: some shape carries or covers it. */
  verdict: z.enum(['delivered', 'absent']),
  /** What the tracer cannot know, whatever it found. */
  limits: z.array(z.string())
})
export type TxidReport = z.infer<typeof TxidReportSchema>

export const BundleSummarySchema = z.object({
  name: z.string(),
  createdAt: z.string(),
  createdBy: z.string(),
  recording: z.object({ kind: z.enum(['har', 'recording']), exchanges: z.number().int() }).nullable(),
  postgres: z.object({ readAt: z.string(), rows: z.number().int() }).nullable()
})
export type BundleSummary = z.infer<typeof BundleSummarySchema>

/** A recording as the doctor takes it (the text of a HAR file or of a Syncscope recording), at most 40 MB. */
const RecordingFileSchema = z.object({
  name: z.string().max(500),
  text: z.string().min(1, 'the file is empty').max(40_000_000, 'the file is larger than 40 MB')
})

/** A shape log to read: the app's own server's files, or any shape URL followed from `-1` as a client would. */
export const LogSourceInputSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('local'), handle: z.string().min(1).max(200) }),
  z.object({
    kind: z.literal('url'),
    /** The shape URL with its definition (`…/v1/shape?table=…&where=…`). */
    url: z.url({ protocol: /^https?$/, error: 'the URL must be http:// or https://' }).max(65_536),
    headers: z.array(NameValueSchema).max(50).default([]),
    params: z.array(NameValueSchema).max(50).default([])
  }),
  /** A log opened before. */
  z.object({ kind: z.literal('opened'), logId: z.string().min(1).max(100) }),
  /** What a client received, as its recording shows it (a workbench session's, a HAR, a tap's). */
  z.object({ kind: z.literal('recording'), recording: RecordingFileSchema })
])
export type LogSourceInput = z.infer<typeof LogSourceInputSchema>

const LIMIT = z.number().int().min(1).max(50_000).default(5_000)

export const timetravelCalls = {
  /** Reads a shape's log (the local server's files, or over HTTP from `-1`) and keeps it for the calls below. */
  'timetravel.open': call(z.object({ source: LogSourceInputSchema }), ShapeLogInfoSchema),
  /** Opens a repro bundle read-only: its log is kept like an opened one; verify reads its recording and rows. */
  'timetravel.openBundle': call(
    z.object({ name: z.string().max(500), text: z.string().min(1).max(200_000_000) }),
    ShapeLogInfoSchema.extend({ bundle: BundleSummarySchema })
  ),
  'timetravel.close': call(z.object({ logId: z.string() }), z.object({ closed: z.boolean() })),
  /**
   * The shape at a point of an opened log, each row with the messages that made it: `limit` rows from the `start`th
   * (a scrolled table's window). Points asked in order are cheap: only the messages between are applied.
   */
  'timetravel.rowsAt': call(
    z.object({ logId: z.string(), at: LogPointSchema, start: z.number().int().min(0).default(0), limit: LIMIT }),
    RowsAtSchema
  ),
  /** What changed between two points of an opened log. */
  'timetravel.diff': call(
    z.object({ logId: z.string(), from: LogPointSchema, to: LogPointSchema, limit: LIMIT }),
    ShapeDiffSchema
  ),
  /** Messages of an opened log, whole, from index `from`. */
  'timetravel.messages': call(
    z.object({ logId: z.string(), from: z.number().int().min(0), count: z.number().int().min(1).max(1_000) }),
    z.object({ entries: z.array(z.object({ entry: LogEntrySchema, message: MessageSchema })) })
  ),
  /**
   * A client's rows (a recording: a workbench session saved as a Syncscope recording, a HAR, a tap's HAR; or an
   * opened bundle's) compared with the server's log and with Postgres (`databaseUrl`, default the app's database).
   */
  'timetravel.verify': call(
    z.object({
      recording: RecordingFileSchema.optional(),
      bundleLogId: z.string().optional(),
      databaseUrl: z.string().max(2_000).nullable().default(null)
    }),
    VerifyReportSchema
  ),
  /** Where a transaction id (as `pg_current_xact_id()` returned it) went in these shapes' logs, or why it did not. */
  'timetravel.txid': call(
    z.object({
      txid: z.string().regex(/^\d{1,20}$/, 'a transaction id is a whole number'),
      shapes: z.array(LogSourceInputSchema).max(20).default([]),
      /** Also every shape of the app's own shape server. */
      allLocal: z.boolean().default(false),
      databaseUrl: z.string().max(2_000).nullable().default(null)
    }),
    TxidReportSchema
  ),
  /** A repro bundle of an opened log: the log, the recording given, the rows Postgres holds now; secrets masked. */
  'timetravel.exportBundle': call(
    z.object({
      logId: z.string(),
      recording: RecordingFileSchema.optional(),
      databaseUrl: z.string().max(2_000).nullable().default(null),
      /** False: no rows in the bundle (a service whose Postgres the app cannot read, and no URL given). */
      readPostgres: z.boolean().default(true)
    }),
    z.object({ name: z.string(), text: z.string() })
  )
}
