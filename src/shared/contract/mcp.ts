import { z } from 'zod'
import { call, event } from './define'
import { McpServerNameSchema, SourceKindSchema, TimeoutMsSchema } from './mcp-config'
import {
  ClientMetadataSettingSchema,
  ClientMetadataUrlSchema,
  HostExportSchema,
  WorkspaceReviewSchema
} from './mcp-files'

export const McpToolErrorCodeSchema = z.enum([
  'invalid_config',
  'auth_unavailable',
  'needs_login',
  'transport_error',
  'timeout',
  'server_error',
  'tool_not_found',
  'insufficient_scope',
  'invalid_answer',
  'crash_loop',
  'unknown_server',
  /** The entry comes from a workspace file the person has not approved (or that changed since): never run. */
  'untrusted'
])
export const McpToolErrorSchema = z.object({
  code: McpToolErrorCodeSchema,
  message: z.string(),
  /** The config path at fault, e.g. `["servers", "github", "auth", "clientSecretRef"]`. */
  path: z.array(z.union([z.string(), z.number()])).optional(),
  /** The file that holds the faulty entry. */
  source: z.string().optional(),
  /** The last lines a stdio server wrote to stderr. */
  stderr: z.array(z.string()).optional(),
  /** insufficient_scope: the scope the server asked for. */
  scope: z.string().optional()
})
export type McpToolError = z.infer<typeof McpToolErrorSchema>

export const McpStateSchema = z.enum([
  'idle',
  'connecting',
  'connected',
  'needs-login',
  'error',
  'disabled',
  'untrusted'
])
export type McpState = z.infer<typeof McpStateSchema>

export const McpSourceSchema = z.object({
  kind: SourceKindSchema,
  path: z.string().nullable(),
  /** The file's format: ours, VS Code's `servers` + `inputs`, or the `mcpServers` map of Claude/Cursor/Inspector. */
  format: z.enum(['servers', 'vscode', 'mcpServers']).nullable(),
  state: z.enum(['ok', 'missing', 'error']),
  error: z.string().nullable()
})
export type McpSource = z.infer<typeof McpSourceSchema>

export const TokenStatusSchema = z.object({
  hasAccessToken: z.boolean(),
  hasRefreshToken: z.boolean(),
  expiresAt: z.number().nullable(),
  scope: z.string().nullable(),
  issuer: z.string().nullable(),
  /** The access token with all but its ends masked. */
  preview: z.string().nullable(),
  clientId: z.string().nullable()
})
export type TokenStatus = z.infer<typeof TokenStatusSchema>

export const McpToolInfoSchema = z.object({
  /** `mcp__<server>__<tool>`. */
  name: z.string(),
  tool: z.string(),
  title: z.string().nullable(),
  description: z.string().nullable(),
  inputSchema: z.record(z.string(), z.unknown()),
  outputSchema: z.record(z.string(), z.unknown()).nullable()
})
export type McpToolInfo = z.infer<typeof McpToolInfoSchema>

export const McpEntrySchema = z.object({
  name: z.string(),
  transport: z.enum(['http', 'stdio']).nullable(),
  authMode: z.string().nullable(),
  state: McpStateSchema,
  error: McpToolErrorSchema.nullable(),
  source: SourceKindSchema,
  sourcePath: z.string().nullable(),
  /** Entries of a lower layer hidden by this one (the workspace wins over settings). */
  shadows: z.array(z.object({ source: SourceKindSchema, path: z.string().nullable() })),
  /** The entry as written, secrets masked; null when the entry is not valid JSON of an object. */
  config: z.record(z.string(), z.unknown()).nullable(),
  toolCount: z.number().int().nullable(),
  pid: z.number().int().nullable(),
  restarts: z.number().int(),
  /** What the entry works despite, e.g. a stdio server started without the login shell's PATH. */
  warning: z.string().nullable(),
  tokens: TokenStatusSchema.nullable()
})
export type McpEntry = z.infer<typeof McpEntrySchema>

export const OAuthStepSchema = z.enum([
  'discovery',
  'registration',
  'authorization',
  'callback',
  'token',
  'refresh',
  'resource'
])
/** How many entries main keeps per server in `mcp.oauthLog` and `mcp.rpcLog`; the renderer's cache keeps as many. */
export const MCP_OAUTH_LOG_KEPT = 200
export const MCP_RPC_LOG_KEPT = 500

export const OAuthExchangeSchema = z.object({
  at: z.string(),
  step: OAuthStepSchema,
  method: z.string(),
  url: z.string(),
  status: z.number().int().nullable(),
  note: z.string().nullable(),
  /** The claims of the access token a token or refresh response carried, when it is a JWT (never the token). */
  claims: z.record(z.string(), z.unknown()).nullable().optional()
})
export type OAuthExchange = z.infer<typeof OAuthExchangeSchema>

/** A server's elicitation/create request, waiting for a person's answer. */
export const McpElicitationSchema = z.object({
  id: z.string(),
  server: z.string(),
  message: z.string(),
  mode: z.enum(['form', 'url']),
  requestedSchema: z.record(z.string(), z.unknown()).nullable(),
  url: z.string().nullable(),
  at: z.string()
})
export type McpElicitation = z.infer<typeof McpElicitationSchema>
export const McpElicitationAnswerSchema = z.object({
  id: z.string().min(1),
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])).optional()
})
export type McpElicitationAnswer = z.infer<typeof McpElicitationAnswerSchema>

/** One JSON-RPC message as it went over the transport. */
export const McpRpcMessageSchema = z.object({
  at: z.string(),
  direction: z.enum(['sent', 'received']),
  message: z.unknown()
})
export type McpRpcMessage = z.infer<typeof McpRpcMessageSchema>

export const McpCallResultSchema = z.object({
  ok: z.boolean(),
  durationMs: z.number(),
  result: z.unknown().optional(),
  error: McpToolErrorSchema.optional(),
  /** The tools/call request and its response, raw. */
  rpc: z.object({ request: z.unknown(), response: z.unknown().nullable() }).nullable().optional(),
  /** Where structuredContent violates the tool's output schema; empty when it conforms, null without a schema. */
  outputErrors: z.array(z.string()).nullable().optional(),
  /** The resource_link items of the result, read from the server. */
  links: z
    .array(z.object({ uri: z.string(), contents: z.unknown().optional(), error: z.string().optional() }))
    .optional()
})
export type McpCallResult = z.infer<typeof McpCallResultSchema>

const named = z.object({ name: McpServerNameSchema })

export const mcpCalls = {
  'mcp.list': call(
    z.object({}),
    z.object({
      entries: z.array(McpEntrySchema),
      sources: z.array(McpSourceSchema),
      secretStore: z.string(),
      clientMetadata: ClientMetadataSettingSchema
    })
  ),
  /** Sets (or with null removes) `mcp.clientMetadataUrl` in settings.json; OAuth servers reconnect with it. */
  'mcp.setClientMetadataUrl': call(z.object({ url: ClientMetadataUrlSchema.nullable() }), ClientMetadataSettingSchema),
  'mcp.tools': call(named, z.array(McpToolInfoSchema)),
  'mcp.callTool': call(
    named.extend({
      tool: z.string().min(1),
      args: z.record(z.string(), z.unknown()).default({}),
      timeoutMs: TimeoutMsSchema
    }),
    McpCallResultSchema
  ),
  /** Saves one server into settings.json (or the workspace mcp.json); secrets typed in go to the secret store. */
  'mcp.save': call(
    z.object({
      name: McpServerNameSchema,
      previousName: McpServerNameSchema.optional(),
      entry: z.unknown(),
      target: z.enum(['settings', 'workspace']).default('settings')
    }),
    McpEntrySchema
  ),
  'mcp.remove': call(
    named.extend({ target: z.enum(['settings', 'workspace']).default('settings') }),
    z.object({ removed: z.boolean() })
  ),
  'mcp.reconnect': call(named, McpEntrySchema),
  'mcp.login': call(named, z.object({ authorizeUrl: z.string() })),
  'mcp.logout': call(named, McpEntrySchema),
  'mcp.oauthLog': call(named, z.array(OAuthExchangeSchema)),
  /** Every JSON-RPC message exchanged with the server (tools/list, tools/call, …), newest last. */
  'mcp.rpcLog': call(named, z.array(McpRpcMessageSchema)),
  /** Elicitation requests waiting for an answer (all servers). */
  'mcp.elicitations': call(z.object({}), z.array(McpElicitationSchema)),
  'mcp.answerElicitation': call(McpElicitationAnswerSchema, z.object({ answered: z.literal(true) })),
  /** Config files of Claude Desktop/Code, Cursor, VS Code and MCP Inspector found on this machine. */
  'mcp.importCandidates': call(z.object({}), z.array(z.object({ client: z.string(), path: z.string() }))),
  'mcp.import': call(
    z.object({ path: z.string().min(1, 'give the path of the file to import') }),
    z.object({ imported: z.array(z.string()), skipped: z.array(z.object({ name: z.string(), reason: z.string() })) })
  ),
  /** Each host's file, its servers, and the diff an export of our servers (as launcher entries) would make. */
  'mcp.hostExports': call(z.object({}), z.array(HostExportSchema)),
  /** Writes the export previewed (`beforeDigest` of the file as shown): refused if the file changed since. */
  'mcp.exportToHost': call(
    z.object({
      host: HostExportSchema.shape.host,
      beforeDigest: z.string(),
      /** Of Claude Code's settings as shown (its permission rules): refused if they changed since. */
      permissionsDigest: z.string().optional()
    }),
    HostExportSchema
  ),
  /** The workspace mcp.json for review (null: there is none): its servers, what they ask for, its approval. */
  'mcp.workspaceReview': call(z.object({}), WorkspaceReviewSchema.nullable()),
  /** Approves the workspace mcp.json with this content (`sha256` of the review shown): refused if it changed since. */
  'mcp.approveWorkspace': call(z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/) }), WorkspaceReviewSchema),
  /** Takes the approval away: the file's servers stop and are listed as untrusted. */
  'mcp.revokeWorkspace': call(z.object({}), WorkspaceReviewSchema.nullable()),
  /** A value for a VS Code `${input:id}`; it goes to the secret store. */
  'mcp.setInput': call(
    z.object({ id: z.string().min(1), value: z.string().min(1, 'the value is empty') }),
    z.object({ stored: z.literal(true) })
  )
}

export const mcpEvents = {
  /** Any entry changed state, or a config file changed. */
  'mcp.changed': event(z.object({ names: z.array(z.string()) })),
  /** An OAuth flow wants the browser: the renderer opens it in a new tab (or the system browser). */
  'mcp.authorize': event(z.object({ name: z.string(), url: z.string() })),
  'mcp.oauthStep': event(z.object({ name: z.string(), exchange: OAuthExchangeSchema })),
  'mcp.rpc': event(z.object({ name: z.string(), message: McpRpcMessageSchema })),
  /** A server asks the person something (elicitation/create): the UI shows the form and answers with mcp.answerElicitation. */
  'mcp.elicitation': event(McpElicitationSchema)
}
