import type { HeaderList } from './recorder'

/**
 * Why a stream could not go on:
 * - `credentials`: 401/403, the caller should supply new credentials (onError returning new headers or params);
 * - `client`: any other 4xx, the request is wrong and is not retried unless onError says so;
 * - `protocol`: a response that breaks the protocol (missing headers, a body that is not a message array);
 * - `server` / `network`: 5xx, 429 and failed connections, retried with backoff and reported only as notes.
 */
export type ShapeErrorKind = 'credentials' | 'client' | 'protocol' | 'server' | 'network'

export class ShapeStreamError extends Error {
  constructor(
    readonly kind: ShapeErrorKind,
    message: string,
    readonly url: string,
    readonly status: number | null = null,
    readonly body: string | null = null,
    readonly headers: HeaderList = []
  ) {
    super(message)
    this.name = 'ShapeStreamError'
  }

  /** The body as JSON, when it is JSON (the server's `{message, errors}`). */
  get json(): unknown {
    try {
      return this.body === null ? null : JSON.parse(this.body)
    } catch {
      return null
    }
  }
}

/** The error an HTTP status means, with the server's own message when it gave one. */
export function errorForStatus(url: string, status: number, body: string, headers: HeaderList): ShapeStreamError {
  const kind = status === 401 || status === 403 ? 'credentials' : status >= 500 || status === 429 ? 'server' : 'client'
  return new ShapeStreamError(kind, `HTTP ${status}: ${summariseBody(body)}`, url, status, body, headers)
}

function summariseBody(body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: unknown; error?: unknown; errors?: unknown }
    const message =
      typeof parsed.message === 'string' ? parsed.message : typeof parsed.error === 'string' ? parsed.error : ''
    return parsed.errors ? `${message} ${JSON.stringify(parsed.errors)}`.trim() : message || body.slice(0, 300)
  } catch {
    return body.slice(0, 300) || '(empty body)'
  }
}
