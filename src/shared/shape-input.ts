import { z } from 'zod'

/**
 * What a shape request says about its shape (its URL's `table`, `columns`, `queryable_columns`, `where`, `params[n]`,
 * `replica`, `log`), before the table is looked up: the shape server persists it with each shape, and time travel
 * names shapes by it.
 */
export const ShapeInputSchema = z.object({
  table: z.string(),
  columns: z.string().nullable(),
  queryableColumns: z.string().nullable(),
  where: z.string().nullable(),
  /** `$1` → `params["1"]`… */
  params: z.record(z.string(), z.string()),
  replica: z.enum(['default', 'full']),
  log: z.enum(['full', 'changes_only'])
})
export type ShapeInput = z.infer<typeof ShapeInputSchema>
