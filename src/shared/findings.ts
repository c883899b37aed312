import { z } from 'zod'

/**
 * A finding about a shape endpoint or a recorded sync: what went wrong, the exchanges that show it, the rule it breaks
 * (with its section of docs/protocol.md) and, when the cause is a known proxy or CDN misconfiguration, the fix.
 * `syncscope check` produces them; the sync doctor reads recordings into the same shape.
 */
export const HeaderListSchema = z.array(z.tuple([z.string(), z.string()]))

export const EvidenceSchema = z.object({
  /** A short name for the exchange in its check ("initial request", "after DELETE", …). */
  label: z.string(),
  request: z.object({
    method: z.string(),
    /** Credentials masked. */
    url: z.string(),
    headers: HeaderListSchema,
    body: z.string().optional()
  }),
  response: z
    .object({
      status: z.number().int(),
      headers: HeaderListSchema,
      /** The body text (cut at a limit); SSE streams show their raw frames. */
      body: z.string(),
      truncated: z.boolean(),
      /** Milliseconds from sending the request to the response head. */
      headMs: z.number(),
      /** Milliseconds from sending the request to the end of the body, null while a stream was still open. */
      endMs: z.number().nullable()
    })
    .nullable(),
  /** SSE frames with their arrival time after the request was sent. */
  frames: z.array(z.object({ atMs: z.number(), raw: z.string() })).optional(),
  /** A network failure instead of (or in the middle of) a response. */
  error: z.string().optional()
})
export type Evidence = z.infer<typeof EvidenceSchema>

export const SeveritySchema = z.enum(['error', 'warning'])
export type Severity = z.infer<typeof SeveritySchema>

export const FindingSchema = z.object({
  id: z.string(),
  severity: SeveritySchema,
  /** What was seen, in one or two sentences. */
  message: z.string(),
  rule: z.object({
    /** What the protocol says. */
    text: z.string(),
    /** `docs/protocol.md#section`. */
    doc: z.string()
  }),
  /** How to fix it, when the cause is known (typically a proxy or CDN setting). */
  fix: z.string().nullable(),
  evidence: z.array(EvidenceSchema)
})
export type Finding = z.infer<typeof FindingSchema>
