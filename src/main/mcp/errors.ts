import type { McpToolError } from '../../shared/contract/mcp'

/** A failure the registry reports as a structured McpToolError. */
export class McpFailure extends Error {
  constructor(
    readonly code: McpToolError['code'],
    message: string,
    readonly extra: Omit<McpToolError, 'code' | 'message'> = {}
  ) {
    super(message)
    this.name = 'McpFailure'
  }

  toToolError(): McpToolError {
    return { code: this.code, message: this.message, ...this.extra }
  }
}

export function toToolError(error: unknown, fallback: McpToolError['code'] = 'transport_error'): McpToolError {
  if (error instanceof McpFailure) return error.toToolError()
  return { code: fallback, message: error instanceof Error ? error.message : String(error) }
}
