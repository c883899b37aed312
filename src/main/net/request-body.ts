import type { IncomingMessage } from 'node:http'

/** Why a request body was refused: 413 too large, 400 not JSON (or not the JSON asked for). Each room words its answer. */
export class RequestBodyError extends Error {
  override readonly name = 'RequestBodyError'
  constructor(
    readonly status: 400 | 413,
    readonly code: 'body_too_large' | 'invalid_json' | 'invalid_body',
    message: string,
    /** The JSON parser's own words, for a 400 invalid_json. */
    readonly details?: string
  ) {
    super(message)
  }
}

const textOf = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')

const tooLarge = (limit: number) =>
  new RequestBodyError(413, 'body_too_large', `request body is larger than ${limit} bytes`)

/**
 * The whole body, at most `limit` bytes: a larger declared Content-Length is refused before reading, a larger body as
 * soon as it passes the limit; the rest is drained, so the 413 reaches a client still sending.
 */
export async function readRequestBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > limit) {
    req.resume()
    throw tooLarge(limit)
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) {
      req.resume()
      throw tooLarge(limit)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/** A JSON body's value; null when the body is empty or only whitespace. */
export function parseJsonBody(bytes: Uint8Array): unknown {
  const text = textOf(bytes)
  if (text.trim() === '') return null
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new RequestBodyError(400, 'invalid_json', 'request body is not valid JSON', (error as Error).message)
  }
}

/** A JSON object body; null when the body is empty. Arrays, strings, numbers and `null` are refused. */
export function parseJsonObjectBody(bytes: Uint8Array): Record<string, unknown> | null {
  if (textOf(bytes).trim() === '') return null
  const value = parseJsonBody(bytes)
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new RequestBodyError(400, 'invalid_body', 'the request body must be a JSON object')
  return value as Record<string, unknown>
}
