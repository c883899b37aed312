import { randomUUID } from 'node:crypto'
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse
} from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { z } from 'zod'

export type Gate =
  | { kind: 'none' }
  /** The request must carry this exact header value. */
  | { kind: 'header'; name: string; value: string }
  /** A JWT access token from the issuer, with the server's /mcp URL as audience. */
  | {
      kind: 'oauth'
      issuer: () => string
      /** Tools that need more than `mcp:tools`: called without these scopes they answer 403 insufficient_scope. */
      toolScopes?: Record<string, string[]>
      /** JSON-RPC methods (initialize, tools/list, …) that need more than `mcp:tools`, answered 403 the same way. */
      methodScopes?: Record<string, string[]>
      /** False: the 401 names no resource_metadata, so the client must find the well-known path itself. */
      challengeNamesMetadata?: boolean
      /** Where the protected resource metadata is served (default its well-known path); nowhere else. */
      metadataPath?: string
      /** The scope the 401 challenge names (`scope="…"`), if any. */
      challengeScope?: string
      /** A refused token is answered 401 only after this long (a slow server: a refresh may end meanwhile). */
      unauthorizedDelayMs?: number
    }

export interface RunningMcpHttpServer {
  url: string
  base: string
  /** Headers of every /mcp request. */
  requests: IncomingHttpHeaders[]
  /** Paths of the protected resource metadata requests (RFC 9728). */
  metadataRequests: string[]
  /** Why each refused /mcp request was refused, in order (what a failing test prints). */
  refusals: string[]
  /** Refuses the access token with this jti from now on (as after a revocation). */
  revoke(jti: string): void
  /** jti of the last token accepted. */
  lastJti(): string | null
  /** Forgets every session, as a server restart does (stateful servers only). */
  dropSessions(): void
  stop(): Promise<void>
}

function toolsFor(server: McpServer, caller: () => Record<string, unknown>, scoped: string[]): void {
  server.registerTool('echo', { description: 'Echoes text', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }]
  }))
  for (const name of scoped)
    server.registerTool(name, { description: 'Needs a wider scope' }, async () => ({
      content: [{ type: 'text', text: `${name} done` }]
    }))
  server.registerTool('whoami', { description: 'The caller as the server sees it' }, async () => ({
    content: [{ type: 'text', text: JSON.stringify(caller()) }]
  }))
}

/** The scopes a request (its method, or the tool a tools/call names) needs beyond what the token carries. */
function missingScopes(
  gate: { toolScopes?: Record<string, string[]>; methodScopes?: Record<string, string[]> },
  body: unknown,
  caller: Record<string, unknown>
): string[] {
  const message = body as { method?: string; params?: { name?: string } } | undefined
  const granted = new Set(String(caller.scope ?? '').split(' '))
  const needed = [
    ...(gate.methodScopes?.[message?.method ?? ''] ?? []),
    ...(message?.method === 'tools/call' ? (gate.toolScopes?.[message.params?.name ?? ''] ?? []) : [])
  ]
  return needed.filter((scope) => !granted.has(scope))
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk)
  const text = Buffer.concat(chunks).toString('utf8')
  return text ? JSON.parse(text) : undefined
}

/**
 * A streamable-HTTP MCP server built with the SDK, behind an API key, OAuth bearer tokens, or nothing; stateless (a
 * server per request) or stateful (sessions by `mcp-session-id`, answered 404 once forgotten).
 */
export async function startMcpHttpServer(
  gate: Gate,
  options: { stateful?: boolean } = {}
): Promise<RunningMcpHttpServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const url = `${base}/mcp`
  const requests: IncomingHttpHeaders[] = []
  const revoked = new Set<string>()
  let last: string | null = null
  const metadataRequests: string[] = []
  const refusals: string[] = []
  const jwks = new Map<string, ReturnType<typeof createRemoteJWKSet>>()
  const metadataUrl = `${base}${(gate.kind === 'oauth' && gate.metadataPath) || '/.well-known/oauth-protected-resource/mcp'}`

  function unauthorized(res: ServerResponse, description: string): void {
    const named =
      gate.kind === 'oauth' && gate.challengeNamesMetadata !== false ? `, resource_metadata="${metadataUrl}"` : ''
    const scope = gate.kind === 'oauth' && gate.challengeScope ? `, scope="${gate.challengeScope}"` : ''
    const challenge =
      gate.kind === 'oauth'
        ? `Bearer error="invalid_token", error_description="${description}"${named}${scope}`
        : 'ApiKey'
    res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': challenge })
    res.end(JSON.stringify({ error: 'invalid_token', error_description: description }))
  }

  async function authorise(req: IncomingMessage): Promise<Record<string, unknown> | string> {
    if (gate.kind === 'none') return {}
    if (gate.kind === 'header')
      return req.headers[gate.name.toLowerCase()] === gate.value ? { key: 'ok' } : 'wrong or missing API key'
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]
    if (!token) return 'no bearer token'
    const issuer = gate.issuer()
    if (!jwks.has(issuer)) jwks.set(issuer, createRemoteJWKSet(new URL(`${issuer}/jwks`)))
    try {
      const { payload } = await jwtVerify(token, jwks.get(issuer)!, { issuer, audience: url })
      if (payload.jti && revoked.has(payload.jti)) return 'token revoked'
      last = payload.jti ?? null
      return payload as Record<string, unknown>
    } catch (error) {
      return (error as Error).message
    }
  }

  server.on('request', (req, res) => {
    void (async () => {
      const path = req.url ?? '/'
      if (path.startsWith('/.well-known/') || (gate.kind === 'oauth' && path === gate.metadataPath))
        metadataRequests.push(path)
      if (gate.kind === 'oauth' && req.url === new URL(metadataUrl).pathname) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            resource: url,
            authorization_servers: [gate.issuer()],
            scopes_supported: [
              'mcp:tools',
              ...new Set([...Object.values(gate.toolScopes ?? {}), ...Object.values(gate.methodScopes ?? {})].flat())
            ],
            resource_name: 'http-fixture',
            bearer_methods_supported: ['header']
          })
        )
        return
      }
      if (!req.url?.startsWith('/mcp')) {
        res.writeHead(404).end()
        return
      }
      requests.push(req.headers)
      const caller = await authorise(req)
      if (typeof caller === 'string') {
        refusals.push(caller)
        const delayMs = gate.kind === 'oauth' ? (gate.unauthorizedDelayMs ?? 0) : 0
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
        return unauthorized(res, caller)
      }
      const body = req.method === 'POST' ? await readBody(req) : undefined
      const missing = gate.kind === 'oauth' ? missingScopes(gate, body, caller) : []
      if (missing.length > 0) {
        const wanted = [
          ...new Set([
            ...String(caller.scope ?? '')
              .split(' ')
              .filter(Boolean),
            ...missing
          ])
        ].join(' ')
        res.writeHead(403, {
          'content-type': 'application/json',
          'www-authenticate': `Bearer error="insufficient_scope", scope="${wanted}", resource_metadata="${metadataUrl}"`
        })
        res.end(JSON.stringify({ error: 'insufficient_scope', scope: wanted }))
        return
      }
      const sessionId = req.headers['mcp-session-id']
      if (options.stateful && typeof sessionId === 'string') {
        const session = sessions.get(sessionId)
        if (!session) {
          res.writeHead(404, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }))
          return
        }
        return session.handleRequest(req, res, body)
      }
      const mcp = new McpServer({ name: 'http-fixture', version: '1.0.0' })
      toolsFor(mcp, () => caller, gate.kind === 'oauth' ? Object.keys(gate.toolScopes ?? {}) : [])
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: options.stateful ? () => randomUUID() : undefined,
        enableJsonResponse: true,
        onsessioninitialized: (id) => void sessions.set(id, transport)
      })
      if (!options.stateful) res.on('close', () => void transport.close().then(() => mcp.close()))
      await mcp.connect(transport)
      await transport.handleRequest(req, res, body)
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(error))
    })
  })
  return {
    url,
    base,
    requests,
    metadataRequests,
    refusals,
    revoke: (jti) => revoked.add(jti),
    lastJti: () => last,
    dropSessions: () => sessions.clear(),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
