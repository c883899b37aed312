import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { McpHttpServerConfig } from '../../../shared/contract/mcp-config'
import type { McpToolError } from '../../../shared/contract/mcp'
import type { FetchLike } from '../auth/oauth-log'
import { toToolError } from '../errors'
import { BaseConnection, failureOf } from './connection'
import { DEFAULT_RESTART, needsLoginError } from './machine'
import { messageSizeCapped } from './message-size'

export interface HttpAuthWiring {
  fetch: FetchLike
  authProvider?: OAuthClientProvider
  /** False when the grant needs a person first (no tokens yet): the entry shows needs-login without a request. */
  canConnect(): boolean
}

/** Streamable HTTP; a 401 the auth layer cannot recover from leaves the entry in needs-login. */
export class HttpConnection extends BaseConnection {
  constructor(
    private readonly config: McpHttpServerConfig,
    private readonly wiring: HttpAuthWiring,
    onChange: () => void
  ) {
    super({ name: config.name, command: null, policy: DEFAULT_RESTART }, onChange)
  }

  protected override loginReady(): boolean {
    return this.wiring.canConnect()
  }

  /** A new transport to the server with this entry's headers and auth (the launcher bridges one to stdio). */
  transport(): StreamableHTTPClientTransport {
    let refused: McpToolError | null = null
    this.send({ kind: 'bridge', loginReady: this.loginReady() }, (effect) => {
      if (effect.kind === 'refuse') refused = effect.error
    })
    if (refused) throw failureOf(refused)
    return this.newTransport()
  }

  private newTransport(): StreamableHTTPClientTransport {
    const transport: StreamableHTTPClientTransport = new StreamableHTTPClientTransport(new URL(this.config.url), {
      fetch: messageSizeCapped(this.wiring.fetch, this.config.name, (refused) => {
        transport.onerror?.(refused)
        void transport.close()
      }),
      ...(this.wiring.authProvider ? { authProvider: this.wiring.authProvider } : {})
    })
    return transport
  }

  protected async open(): Promise<Client> {
    const client = this.newClient()
    try {
      await this.initialize(client, this.newTransport(), this.config.name, this.config.timeoutMs ?? 30_000)
    } catch (error) {
      await client.close().catch(() => {})
      if (error instanceof UnauthorizedError && this.wiring.authProvider) {
        this.send({ kind: 'login-needed' })
        throw failureOf(needsLoginError(this.config.name))
      }
      this.send({ kind: 'open-failed', error: httpFailure(error) })
      throw this.failure()
    }
    client.onclose = () => {
      if (this.current !== client) return
      this.current = null
      this.send({ kind: 'dropped' })
    }
    return this.opened(client)
  }
}

/** A refused credential reads as an auth problem with its HTTP status; anything else as a transport error. */
function httpFailure(error: unknown): McpToolError {
  const status = (error as { code?: unknown }).code
  if (status === 401 || status === 403) {
    return {
      code: 'auth_unavailable',
      message: `the server refused the credentials (HTTP ${status}): ${(error as Error).message}`
    }
  }
  return toToolError(error)
}
