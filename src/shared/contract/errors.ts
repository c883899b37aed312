import { z } from 'zod'

/** The error body every transport returns for a failed call. */
export const RpcErrorSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    issues: z.array(z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })).optional(),
    details: z.record(z.string(), z.unknown()).optional()
  })
})
export type RpcErrorBody = z.infer<typeof RpcErrorSchema>

/** An error a handler throws on purpose; its code and message reach the renderer as they are. */
export class RpcError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>
  ) {
    super(message)
    this.name = 'RpcError'
  }
}
