import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { McpHttpServerConfig, McpToolError } from '../../../shared/contract/mcp'
import type { FetchLike } from '../auth/oauth-log'
import { McpFailure, toToolError } from '../errors'
import { BaseConnection } from './connection'

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
    super(onChange)
  }

  /** A new transport to the server with this entry's headers and auth (the launcher bridges one to stdio). */
  transport(): StreamableHTTPClientTransport {
    if (!this.wiring.canConnect()) {
      this.set('needs-login')
      throw needsLogin(this.config.name)
    }
    return new StreamableHTTPClientTransport(new URL(this.config.url), {
      fetch: this.wiring.fetch,
      ...(this.wiring.authProvider ? { authProvider: this.wiring.authProvider } : {})
    })
  }

  protected async open(): Promise<Client> {
    const transport = this.transport()
    this.set('connecting')
    const client = this.newClient()
    try {
      await this.initialize(client, transport, this.config.name, this.config.timeoutMs ?? 30_000)
    } catch (error) {
      await client.close().catch(() => {})
      if (error instanceof UnauthorizedError && this.wiring.authProvider) {
        this.set('needs-login')
        throw needsLogin(this.config.name)
      }
      const failure = httpFailure(error)
      this.set('error', failure)
      const { code, message, ...extra } = failure
      throw new McpFailure(code, message, extra)
    }
    client.onclose = () => {
      if (this.current === client && !this.closed) {
        this.current = null
        this.set('idle')
      }
    }
    this.current = client
    this.set('connected')
    return client
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

function needsLogin(name: string): McpFailure {
  return new McpFailure(
    'needs_login',
    `${name} needs a login: use "Log in" on the MCP page or run \`syncscope mcp login ${name}\``
  )
}
