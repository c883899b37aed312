import { z } from 'zod'
import { HeaderBrandSchema } from '../protocol'
import { ShapeDraftSchema } from '../shape-client/definition'
import { call } from './define'

export const NameValueSchema = z.object({
  name: z.string().trim().min(1, 'a name is required').max(200),
  value: z.string().max(8_000),
  /** The value was a credential and was not saved: it has to be entered again. */
  redacted: z.boolean().default(false)
})
export type NameValue = z.infer<typeof NameValueSchema>

/** Where the workbench sends shape requests: the app's shape server, the app's proxy as one of its test users, or any URL. */
export const ShapeTargetSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('local') }),
  z.object({
    kind: z.literal('custom'),
    /** The shape endpoint itself, e.g. https://example.com/v1/shape or a proxy path. */
    url: z.url({ protocol: /^https?$/, error: 'the URL must be http:// or https://' }),
    headers: z.array(NameValueSchema).max(50).default([]),
    /** Extra query parameters such as `secret`. */
    params: z.array(NameValueSchema).max(50).default([])
  }),
  z.object({
    kind: z.literal('proxy'),
    /** A named shape of the proxy config (`/api/shapes/<name>`), or the gatekeeper for the composed shape's table. */
    route: z.enum(['shape', 'gatekeeper']),
    /** The named shape; '' until one is picked. */
    shapeName: z.string().max(200),
    /** The proxy config's test user to call as ('' until one is picked); their token is asked for per run, never saved. */
    userId: z.string().max(200)
  })
])
export type ShapeTarget = z.infer<typeof ShapeTargetSchema>

export const WorkbenchSettingsSchema = z.object({
  definition: ShapeDraftSchema,
  live: z.enum(['off', 'long-poll', 'sse']).default('long-poll'),
  offset: z.enum(['-1', 'now']).default('-1'),
  target: ShapeTargetSchema.default({ kind: 'local' })
})
export type WorkbenchSettings = z.infer<typeof WorkbenchSettingsSchema>

export const SavedShapeInputSchema = WorkbenchSettingsSchema.extend({
  name: z.string().trim().min(1, 'give the shape a name').max(120)
})

export const SavedShapeSchema = SavedShapeInputSchema.extend({ id: z.string().min(1), savedAt: z.iso.datetime() })
export type SavedShape = z.infer<typeof SavedShapeSchema>

export const LocalShapeServerSchema = z.object({
  /** The app's own shape endpoint; null when its port was picked at start-up (the UI's own origin serves it). */
  url: z.string().nullable(),
  headerBrand: HeaderBrandSchema,
  /** The local server was started with --secret: requests need `secret` (the value is never sent here). */
  secretRequired: z.boolean(),
  longPollTimeoutMs: z.number().int(),
  sseKeepAliveMs: z.number().int()
})
export type LocalShapeServer = z.infer<typeof LocalShapeServerSchema>

export const WriteKindSchema = z.enum(['insert', 'update', 'delete'])
export type WriteKind = z.infer<typeof WriteKindSchema>

export const WriteReportSchema = z.object({
  applied: z.object({ insert: z.number().int(), update: z.number().int(), delete: z.number().int() }),
  failed: z.number().int(),
  /** The distinct errors Postgres gave (at most 3), e.g. a foreign key refusing a delete. */
  errors: z.array(z.string())
})
export type WriteReport = z.infer<typeof WriteReportSchema>

/** One `IN (SELECT …)` of a where, and the inner rows that select a given outer row's values now. */
export const SubqueryAdmissionSchema = z.object({
  /** The subquery test as written (normalised), e.g. `project_id IN (SELECT id FROM projects WHERE NOT archived)`. */
  test: z.string(),
  /** `NOT (… IN …)`: the row is in through this test when no inner row selects its values. */
  negated: z.boolean(),
  /** The outer row's columns the test compares, with the row's values (null: NULL, or the column is not in the shape). */
  columns: z.array(z.object({ name: z.string(), value: z.string().nullable(), inShape: z.boolean() })),
  innerTable: z.string(),
  /** Inner rows (all their columns, Postgres text output) whose selected columns equal the row's values, at most `limit`. */
  innerRows: z.array(z.record(z.string(), z.string().nullable())),
  /** More inner rows matched than are listed. */
  more: z.boolean()
})
export type SubqueryAdmission = z.infer<typeof SubqueryAdmissionSchema>

export const AdmittedByInputSchema = z.object({
  where: z.string().min(1).max(100_000),
  params: z.array(z.string()).max(1_000).default([]),
  row: z.record(z.string(), z.string().nullable())
})

export const shapesWorkbenchCalls = {
  'shapesWorkbench.localServer': call(z.object({}), LocalShapeServerSchema),
  'shapesWorkbench.saved': call(z.object({}), z.array(SavedShapeSchema)),
  /** Saves (or, with the same name, replaces) a shape; credential values are dropped before it is written. */
  'shapesWorkbench.save': call(SavedShapeInputSchema, SavedShapeSchema),
  'shapesWorkbench.delete': call(z.object({ id: z.string().min(1) }), z.object({ deleted: z.boolean() })),
  /** The write generator: `count` random inserts/updates/deletes on a table, each its own transaction. */
  'shapesWorkbench.randomWrites': call(
    z.object({
      schema: z.string().min(1),
      table: z.string().min(1),
      count: z.number().int().min(1).max(100),
      kinds: z.array(WriteKindSchema).min(1, 'pick at least one kind of write')
    }),
    WriteReportSchema
  ),
  /**
   * Why a row of a subquery shape is in it: for each `IN (SELECT …)` of the where (outside other subqueries), the inner
   * rows that select the row's values, read from the app's Postgres now (a read-only query).
   */
  'shapesWorkbench.admittedBy': call(AdmittedByInputSchema, z.object({ subqueries: z.array(SubqueryAdmissionSchema) }))
}
