import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { refusal, type EntryBook } from './entry'
import { McpFailure } from './errors'

/**
 * Every request to a server goes through here: to its connection's client, tried once more where that can help (a
 * session the server forgot, a token refreshed meanwhile, a scope stepped up).
 */
export class Sessions {
  constructor(
    private readonly book: EntryBook,
    /** A new authorisation for the wider scope a 403 insufficient_scope asked for (the login flow's step-up). */
    private readonly stepUp: (name: string, scope: string) => Promise<void>
  ) {}

  /**
   * Every request to a server (its initialize included): a 403 insufficient_scope steps up (a new authorisation for
   * the wider scope) and the request is tried once more.
   */
  async withSession<T>(name: string, request: (client: Client) => Promise<T>): Promise<T> {
    try {
      return await this.inSession(name, request)
    } catch (error) {
      if (!(error instanceof McpFailure && error.code === 'insufficient_scope')) throw error
      await this.stepUp(name, error.extra.scope ?? '')
    }
    return this.inSession(name, request)
  }

  /** Runs a request; when the server restarted and forgot our session (HTTP 404), opens a new one and tries once more. */
  private async inSession<T>(name: string, request: (client: Client) => Promise<T>): Promise<T> {
    try {
      return await request(await this.client(name))
    } catch (error) {
      // sent with the old token while another call refreshed it: the tokens are new now
      if (refusedDuringRefresh(error)) return request(await this.client(name))
      if (!isExpiredSession(error)) throw error
    }
    await this.book.entry(name).connection?.reset()
    return request(await this.client(name))
  }

  private async client(name: string): Promise<Client> {
    const entry = this.book.entry(name)
    const refused = refusal(entry)
    if (refused) throw refused
    if (!entry.connection) throw new McpFailure('transport_error', `${name} has no connection`)
    return entry.connection.client()
  }
}

/** Streamable HTTP answers 404 to a session id the server no longer knows. */
function isExpiredSession(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404
}

/**
 * The SDK's transport marks "authorised" for all its requests at once: a request sent with the old access token
 * that is refused (401) just after a concurrent one refreshed it fails with this, though the new token would do.
 */
function refusedDuringRefresh(error: unknown): boolean {
  return (
    error instanceof StreamableHTTPError &&
    error.code === 401 &&
    error.message.includes('after successful authentication')
  )
}
