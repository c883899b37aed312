import { z } from 'zod'

/**
 * `GET /v1/debug/shapes` (a Syncscope extension, docs/protocol.md "The server's state"): the shape server's shapes,
 * limits and replication slots, as the Server page shows them. The UI's `server.state` call answers the same JSON.
 */
export const DEBUG_SHAPES_PATH = '/v1/debug/shapes'
export const DEBUG_SHAPES_DEFAULT_LIMIT = 100
/** Shapes per answer at most: 100,000 shapes are read a page at a time (`after=<next>`). */
export const DEBUG_SHAPES_MAX_LIMIT = 1_000

export const SNAPSHOT_PHASES = ['pending', 'building', 'ready', 'failed', 'dropped'] as const

const count = z.number().int().nonnegative()
const bytes = z.number().int().nonnegative()
const isoTime = z.string()

export const ShapeDependencySchema = z.object({
  /** The subquery's table, as Postgres prints it (`public.projects`). */
  table: z.string(),
  columns: z.array(z.string()),
  /** The subquery's own where (it may nest further subqueries); null when it has none. */
  where: z.string().nullable()
})

export const ShapeDefinitionSchema = z.object({
  /** As Postgres prints it: `public.issues`, `public."UserSettings"`. */
  table: z.string(),
  where: z.string().nullable(),
  params: z.record(z.string(), z.string()),
  /** The selected columns, in table order; null when the request selected all of them. */
  columns: z.array(z.string()).nullable(),
  replica: z.enum(['default', 'full']),
  log: z.enum(['full', 'changes_only']),
  /** The `IN (SELECT …)` subqueries the where depends on, innermost first; empty for a plain shape. */
  subquery_dependencies: z.array(ShapeDependencySchema)
})

export const ShapeStateSchema = z.object({
  handle: z.string(),
  definition: ShapeDefinitionSchema,
  /** Where its snapshot stands: pending (before its transaction), building (chunks being written), ready, failed, dropped. */
  phase: z.enum(SNAPSHOT_PHASES),
  /** Why its snapshot failed. */
  failure: z.string().nullable(),
  /** Snapshot chunk files written. */
  snapshot_chunks: count,
  /** The shape's files on disk (what `--max-disk` bounds): its snapshot chunks, then log.jsonl and log.idx. */
  disk_bytes: bytes,
  snapshot_bytes: bytes,
  log_bytes: bytes,
  /** Changes in its log. */
  log_entries: count,
  /** Its log's last offset (`0_inf` while only the snapshot is there). */
  latest_offset: z.string(),
  /** Live long-polls held now, waiting for its next change. */
  long_polls: count,
  /** SSE streams open now. */
  sse_streams: count,
  created_at: isoTime,
  /** When its log last grew; null while it holds no change. */
  last_change_at: isoTime.nullable(),
  /** When a request last used it; null for a shape restored on start and not asked for since. */
  last_used_at: isoTime.nullable(),
  /** Its place in the order the limits drop shapes in: 1 is the least recently used, the next to go. */
  eviction_rank: z.number().int().positive()
})
export type ShapeState = z.infer<typeof ShapeStateSchema>

export const ServerSummarySchema = z.object({
  /** As `/v1/health`: active, or waiting (for Postgres) / stalled (its own writes fail) with the reason. */
  status: z.enum(['active', 'waiting', 'stalled']),
  message: z.string().nullable(),
  /** The last commit LSN the server has processed, as the protocol's `global_last_seen_lsn`. */
  global_last_seen_lsn: z.string(),
  shapes: count,
  /** `--max-shapes`: a new shape past it drops the least recently used ones. */
  max_shapes: count,
  disk_used_bytes: bytes,
  /** `--max-disk` (or half the free disk when the server started): past it, least recently used shapes are dropped. */
  max_disk_bytes: bytes,
  long_polls: count,
  sse_streams: count
})

export const SlotWarningSchema = z.object({
  slot_name: z.string(),
  /** `warning`: act before it hurts; `critical`: the slot is losing (or lost) its WAL, or nothing follows it. */
  level: z.enum(['warning', 'critical']),
  message: z.string()
})
export type SlotWarning = z.infer<typeof SlotWarningSchema>

export const ReplicationSlotSchema = z.object({
  slot_name: z.string(),
  /** The slot this shape server follows Postgres through. */
  ours: z.boolean(),
  slot_type: z.enum(['logical', 'physical']),
  plugin: z.string().nullable(),
  database: z.string().nullable(),
  /** A consumer (walsender) is connected to it. */
  active: z.boolean(),
  /** reserved, extended, unreserved (past max_slot_wal_keep_size: the next checkpoint may remove its WAL) or lost. */
  wal_status: z.string().nullable(),
  /** Postgres 17+: why the slot was invalidated (wal_removed, rows_removed, …). */
  invalidation_reason: z.string().nullable(),
  /** WAL that can still be written before the slot passes max_slot_wal_keep_size; null when that is unlimited. */
  safe_wal_size_bytes: z.number().int().nullable(),
  restart_lsn: z.string().nullable(),
  confirmed_flush_lsn: z.string().nullable(),
  /** pg_wal_lsn_diff(current WAL LSN, confirmed_flush_lsn) — restart_lsn for a physical slot. */
  lag_bytes: z.number().int().nullable(),
  /** pg_wal_lsn_diff(current WAL LSN, restart_lsn): the WAL Postgres keeps for this slot. */
  retained_wal_bytes: z.number().int().nullable(),
  /** Its walsender in pg_stat_replication, while one is connected. */
  walsender: z
    .object({
      state: z.string(),
      sent_lsn: z.string().nullable(),
      flush_lsn: z.string().nullable(),
      write_lag_ms: z.number().nullable(),
      flush_lag_ms: z.number().nullable(),
      replay_lag_ms: z.number().nullable(),
      reply_time: isoTime.nullable()
    })
    .nullable()
})
export type ReplicationSlot = z.infer<typeof ReplicationSlotSchema>

export const ReplicationStateSchema = z.object({
  slot_name: z.string(),
  /** pg_current_wal_lsn() (on a standby, the last replayed LSN) when the figures were read. */
  current_wal_lsn: z.string().nullable(),
  /** max_slot_wal_keep_size in bytes; null when unlimited (-1, the default: a lagging slot may fill the disk). */
  max_slot_wal_keep_size_bytes: z.number().int().nullable(),
  max_wal_size_bytes: z.number().int().nullable(),
  /** Free space on the disk of Postgres's pg_wal; null when it cannot be known (a remote server, or no privilege). */
  wal_disk_free_bytes: z.number().int().nullable(),
  /** Every slot of the Postgres server (another slot that lags holds WAL back too). */
  slots: z.array(ReplicationSlotSchema),
  warnings: z.array(SlotWarningSchema),
  /** Why Postgres could not be asked (the rest of the answer still holds). */
  error: z.string().nullable()
})
export type ReplicationState = z.infer<typeof ReplicationStateSchema>

export const ServerStateSchema = z.object({
  server: ServerSummarySchema,
  replication: ReplicationStateSchema,
  /** Shapes after the filter (all of them without one). */
  matched: count,
  /** Where this page starts among them. */
  offset: count,
  shapes: z.array(ShapeStateSchema),
  /** The `after` of the next page (in last-use order); null on the last page or in another order. */
  next: z.string().nullable()
})
export type ServerState = z.infer<typeof ServerStateSchema>

export const SHAPE_SORT_KEYS = [
  'last_used',
  'handle',
  'table',
  'phase',
  'disk_bytes',
  'log_entries',
  'long_polls',
  'sse_streams',
  'last_change',
  'created'
] as const
export type ShapeSortKey = (typeof SHAPE_SORT_KEYS)[number]

/** Which shapes, in which order: the UI's view of the inventory. */
export const ShapeQuerySchema = z
  .object({
    offset: z.number().int().nonnegative().max(10_000_000).default(0),
    limit: z.number().int().nonnegative().max(DEBUG_SHAPES_MAX_LIMIT).default(DEBUG_SHAPES_DEFAULT_LIMIT),
    /** `last_used` ascending is the order the limits drop shapes in. */
    sort: z
      .object({ key: z.enum(SHAPE_SORT_KEYS), direction: z.enum(['ascending', 'descending']) })
      .default({ key: 'last_used', direction: 'ascending' }),
    /** Shapes whose handle, table, where or phase holds this text (case-insensitive). */
    filter: z.string().max(500).default(''),
    /** Continues the last-use order after this place: the `next` of the page before (then `offset` counts from there). */
    after: z
      .string()
      .regex(/^\d{1,15}$/, 'must be the `next` of a page before')
      .optional()
  })
  .refine(
    (query) => query.after === undefined || (query.sort.key === 'last_used' && query.sort.direction === 'ascending'),
    {
      message: '`after` pages the last-use order only (sort last_used, ascending)',
      path: ['after']
    }
  )
export type ShapeQuery = z.infer<typeof ShapeQuerySchema>
