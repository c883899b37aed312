import { z } from 'zod'
import { FindingSchema } from '../findings'
import { call } from './define'

export const CacheStatusSchema = z.enum(['hit', 'stale', 'revalidated', 'miss', 'browser', 'unknown'])
export type CacheStatus = z.infer<typeof CacheStatusSchema>

/** One shape request of a recording, as the doctor reads it: numbered from 1 in the order they were sent. */
export const TimelineEntrySchema = z.object({
  n: z.number().int(),
  /** Milliseconds after the first request of the recording. */
  atMs: z.number(),
  method: z.string(),
  /** Credentials masked. */
  url: z.string(),
  /** Which shape (table, where, …) the request is for: requests of one shape share it. */
  shape: z.string(),
  request: z.object({
    offset: z.string().nullable(),
    handle: z.string().nullable(),
    cursor: z.string().nullable(),
    live: z.enum(['off', 'long-poll', 'sse']),
    cacheBuster: z.boolean()
  }),
  /** null when no response came (a network failure or an abort). */
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  response: z.object({
    handle: z.string().nullable(),
    offset: z.string().nullable(),
    cursor: z.string().nullable(),
    upToDate: z.boolean(),
    mustRefetch: z.boolean(),
    /** Change messages in the body (inserts, updates, deletes). */
    changes: z.number().int()
  }),
  cache: z.object({ status: CacheStatusSchema, evidence: z.string().nullable() }),
  /** Milliseconds from sending to the response head / to the end of the body; null where unknown. */
  headMs: z.number().nullable(),
  endMs: z.number().nullable()
})
export type TimelineEntry = z.infer<typeof TimelineEntrySchema>

export const DoctorReportSchema = z.object({
  source: z.object({ kind: z.enum(['har', 'recording']), name: z.string(), creator: z.string().nullable() }),
  /** Exchanges in the file that are not shape requests (pages, scripts, other APIs): left out of the timeline. */
  ignored: z.number().int(),
  timeline: z.array(TimelineEntrySchema),
  findings: z.array(FindingSchema),
  /** Explanations that are not faults (e.g. long-polls held by design, which look slow in DevTools). */
  notes: z.array(z.string())
})
export type DoctorReport = z.infer<typeof DoctorReportSchema>

/** At most 40 MB of recording text per call (the HTTP contract takes 64 MB bodies, and JSON escapes grow a HAR). */
const RecordingTextSchema = z
  .string()
  .min(1, 'the file is empty')
  .max(40_000_000, 'the file is larger than 40 MB: record a shorter session, or run `syncscope doctor` on it')

export const doctorCalls = {
  /** Diagnoses a HAR file or a Syncscope recording (the text of the file). */
  'doctor.analyze': call(z.object({ name: z.string().max(500), text: RecordingTextSchema }), DoctorReportSchema),
  /** The same file with tokens, cookies and secrets masked, to attach to a bug report. */
  'doctor.redact': call(
    z.object({ name: z.string().max(500), text: RecordingTextSchema }),
    z.object({ name: z.string(), text: z.string() })
  )
}
