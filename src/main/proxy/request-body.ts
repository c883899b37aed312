/** Request bodies the proxy reads before deciding: the POST subset body and the gatekeeper's shape request. */

import { SUBSET_FIELDS } from '../../shared/protocol'
import { parseJsonObjectBody, RequestBodyError } from '../net/request-body'

export const MAX_BODY_BYTES = 1024 * 1024

/** The only keys a subset body may hold; anything else (`table`, `columns`, `secret`…) would let a body redefine the shape upstream. */
export const SUBSET_BODY_KEYS: ReadonlySet<string> = new Set(SUBSET_FIELDS)

export class BodyError extends Error {
  override readonly name = 'BodyError'
  constructor(
    readonly status: 400 | 413 | 415,
    readonly code: string,
    message: string
  ) {
    super(message)
  }
}

/** Reads at most MAX_BODY_BYTES. */
export async function readBodyBytes(request: Request): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > MAX_BODY_BYTES)
    throw new BodyError(413, 'body_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`)
  const bytes = new Uint8Array(await request.arrayBuffer())
  if (bytes.byteLength > MAX_BODY_BYTES)
    throw new BodyError(413, 'body_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`)
  return bytes
}

/** Parses a JSON object body; an empty body is `{}`. */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  try {
    return parseJsonObjectBody(bytes) ?? {}
  } catch (error) {
    if (!(error instanceof RequestBodyError)) throw error
    throw new BodyError(error.status, error.code, error.details ? `${error.message}: ${error.details}` : error.message)
  }
}

/** Checks a subset body and returns its bytes unchanged, for forwarding. */
export async function readSubsetBody(request: Request): Promise<Uint8Array> {
  const type = request.headers.get('content-type')
  if (type !== null && !/^application\/json\b/i.test(type))
    throw new BodyError(415, 'unsupported_media_type', 'a subset body is JSON: send Content-Type: application/json')
  const bytes = await readBodyBytes(request)
  const keys = Object.keys(parseJsonObject(bytes)).filter((key) => !SUBSET_BODY_KEYS.has(key))
  if (keys.length > 0) {
    throw new BodyError(
      400,
      'unsupported_body_key',
      `a subset body may only hold ${[...SUBSET_BODY_KEYS].join(', ')}; remove ${keys.join(', ')} (the shape is set by the proxy)`
    )
  }
  return bytes
}
