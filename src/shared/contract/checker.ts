import { z } from 'zod'
import { HeaderBrandSchema } from '../protocol'
import { FindingSchema } from '../findings'
import { call, event } from './define'

/** `error`: the check could not finish (it threw): it gave no verdict, and counts as failed. */
export const CheckStatusSchema = z.enum(['pass', 'fail', 'warn', 'skip', 'error'])
export type CheckStatus = z.infer<typeof CheckStatusSchema>

export const CheckResultSchema = z.object({
  id: z.string(),
  title: z.string(),
  status: CheckStatusSchema,
  /** Why it was skipped or could not finish, or a note on how it passed. */
  reason: z.string().nullable(),
  findings: z.array(FindingSchema),
  ms: z.number()
})
export type CheckResult = z.infer<typeof CheckResultSchema>

export const ConformanceReportSchema = z.object({
  /** The endpoint checked, credentials masked. */
  url: z.string(),
  headerBrand: HeaderBrandSchema,
  table: z.string().nullable(),
  /** The checker's own table in the --write-sql database, null without one. */
  writeTable: z.string().nullable(),
  startedAt: z.string(),
  ms: z.number(),
  checks: z.array(CheckResultSchema),
  summary: z.object({ pass: z.number(), fail: z.number(), warn: z.number(), skip: z.number(), error: z.number() })
})
export type ConformanceReport = z.infer<typeof ConformanceReportSchema>

export const CheckerRunInputSchema = z.object({
  /** A shape endpoint; null checks this app's own shape server. */
  url: z.string().url().nullable(),
  headerBrand: HeaderBrandSchema.nullable(),
  table: z.string().min(1).nullable(),
  /** Live checks make changes in a table of their own in this app's database (only when checking this app). */
  writeToAppDatabase: z.boolean(),
  headers: z.record(z.string(), z.string()).default({}),
  params: z.record(z.string(), z.string()).default({}),
  only: z.array(z.string()).default([]),
  /** Longest wait for a server timer (long-poll timeout, SSE keep-alive and lifetime), in seconds. */
  maxWaitSeconds: z.number().int().min(1).max(120).default(30)
})
export type CheckerRunInput = z.input<typeof CheckerRunInputSchema>

export const checkerCalls = {
  /** What the page offers by default: this app's endpoint, brand and a table to read. */
  'checker.defaults': call(
    z.object({}),
    z.object({
      url: z.string().nullable(),
      headerBrand: HeaderBrandSchema,
      table: z.string().nullable(),
      checks: z.array(z.object({ id: z.string(), title: z.string() }))
    })
  ),
  'checker.run': call(CheckerRunInputSchema, ConformanceReportSchema)
}

export const checkerEvents = {
  /** One check finished during a run. */
  'checker.progress': event(z.object({ check: CheckResultSchema }))
}
