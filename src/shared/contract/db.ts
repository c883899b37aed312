import { z } from 'zod'
import { call, event } from './define'

export const ColumnInfoSchema = z.object({
  name: z.string(),
  type: z.string(),
  nullable: z.boolean(),
  isPrimaryKey: z.boolean(),
  default: z.string().nullable()
})

export const TableInfoSchema = z.object({
  schema: z.string(),
  name: z.string(),
  /** Quoted, schema-qualified name as Postgres prints it (e.g. `public."UserSettings"`). */
  qualifiedName: z.string(),
  columns: z.array(ColumnInfoSchema),
  primaryKey: z.array(z.string()),
  rowCount: z.number().int()
})
export type TableInfo = z.infer<typeof TableInfoSchema>

export const DatabaseStatusSchema = z.object({
  state: z.enum(['starting', 'connected', 'error']),
  kind: z.enum(['embedded', 'external']),
  /** Connection URL with the password masked. */
  url: z.string(),
  serverVersion: z.string().nullable(),
  walLevel: z.string().nullable(),
  dataDir: z.string().nullable(),
  error: z.string().nullable()
})
export type DatabaseStatus = z.infer<typeof DatabaseStatusSchema>

export const PostgresErrorSchema = z.object({
  message: z.string(),
  code: z.string().nullable(),
  position: z.number().int().nullable(),
  detail: z.string().nullable(),
  hint: z.string().nullable()
})

export const StatementResultSchema = z.object({
  command: z.string(),
  rowCount: z.number().int().nullable(),
  fields: z.array(z.object({ name: z.string(), type: z.string() })),
  rows: z.array(z.array(z.string().nullable())),
  truncated: z.boolean()
})

export const QueryResultSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), results: z.array(StatementResultSchema), durationMs: z.number() }),
  z.object({ ok: z.literal(false), error: PostgresErrorSchema, durationMs: z.number() })
])
export type QueryResult = z.infer<typeof QueryResultSchema>

export const HistoryEntrySchema = z.object({
  sql: z.string(),
  at: z.string(),
  ok: z.boolean(),
  summary: z.string()
})

/** An embedded cluster kept apart from its data folder (as root, under the clusters folder). */
export const ClusterSchema = z.object({
  /** Its folder's name under the clusters folder: what `syncscope clusters remove` takes. */
  id: z.string(),
  path: z.string(),
  /** The data folder it names back; null when unknown (made before back-references, or the reference is damaged). */
  dataFolder: z.string().nullable(),
  /** Disk it takes (allocated blocks). */
  sizeBytes: z.number().int().nonnegative(),
  /** A Postgres runs on it (its postmaster, or backends a killed one left). */
  running: z.boolean(),
  /** A data folder still names it (where it is, or moved elsewhere): never removed, not even by id. */
  inUse: z.boolean(),
  /** Its data folder is gone or names another cluster: `prune` removes it once it is not running. */
  orphaned: z.boolean(),
  /** Why it is kept or orphaned, in a sentence. */
  reason: z.string(),
  /** When a Postgres last started on it (ISO time); null when never. */
  lastStarted: z.string().nullable(),
  /** The cluster this app runs on. */
  current: z.boolean()
})
export type ClusterInfo = z.infer<typeof ClusterSchema>

/**
 * A cluster's state in one word, as `syncscope clusters list` and the Server page show it. `kept`: a data folder is
 * known but whether it still names the cluster is not (not mounted, unreadable).
 */
export function clusterState(cluster: ClusterInfo): 'running' | 'orphaned' | 'in use' | 'unknown' | 'kept' {
  if (cluster.running) return 'running'
  if (cluster.orphaned) return 'orphaned'
  if (cluster.inUse) return 'in use'
  return cluster.dataFolder === null ? 'unknown' : 'kept'
}

export const ClusterListSchema = z.object({
  /** The clusters folder; null when not running as root (each data folder then holds its own cluster). */
  root: z.string().nullable(),
  clusters: z.array(ClusterSchema)
})
export type ClusterList = z.infer<typeof ClusterListSchema>

export const ClusterPruneSchema = z.object({
  removed: z.array(ClusterSchema),
  /** Folders an initdb or a prune left half-made when its process died. */
  leftovers: z.array(z.string())
})

export const dbCalls = {
  'db.status': call(z.object({}), DatabaseStatusSchema),
  'db.tables': call(z.object({}), z.array(TableInfoSchema)),
  'db.query': call(z.object({ sql: z.string().min(1, 'sql is empty').max(1_000_000) }), QueryResultSchema),
  'db.history': call(z.object({}), z.array(HistoryEntrySchema)),
  'db.connect': call(
    z.object({
      database: z.union([
        z.literal('embedded'),
        z.string().regex(/^postgres(ql)?:\/\//, 'must be embedded or a postgres:// URL')
      ])
    }),
    DatabaseStatusSchema
  ),
  /** The embedded clusters on this machine (as root), with their sizes and whether their data folder still names them. */
  'db.clusters': call(z.object({}), ClusterListSchema),
  /** `syncscope clusters prune`: removes the orphaned clusters whose Postgres is not running (as root only). */
  'db.pruneClusters': call(z.object({}), ClusterPruneSchema)
}

export const dbEvents = {
  /** Data or schema changed through the SQL console or a reconnect: views refetch. */
  'db.changed': event(z.object({ reason: z.enum(['statement', 'connected']) }))
}
