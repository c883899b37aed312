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
  )
}

export const dbEvents = {
  /** Data or schema changed through the SQL console or a reconnect: views refetch. */
  'db.changed': event(z.object({ reason: z.enum(['statement', 'connected']) }))
}
