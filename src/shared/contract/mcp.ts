import { z } from 'zod'
import { call, event } from './define'
import { ToolFilterSchema } from './mcp-tool-filter'

/** Server names become keychain accounts and tool prefixes (`mcp__<name>__<tool>`), so they stay tool-name safe. */
export const McpServerNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'a server name is 1–64 letters, digits, `_` or `-`')

export const OAuthTokensSchema = z.looseObject({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  /** Unix seconds. */
  expiresAt: z.number().optional(),
  scope: z.string().optional(),
  tokenType: z.string().optional(),
  /** The authorisation server these tokens are bound to (issuer binding). */
  issuer: z.string().optional()
})
export type OAuthTokens = z.infer<typeof OAuthTokensSchema>

/** A client: its id and secret plus the RFC 7591 registration metadata, kept as the server returned it. */
export const OAuthClientInfoSchema = z.looseObject({
  clientId: z.string().min(1),
  clientSecret: z.string().optional(),
  issuer: z.string().optional()
})
export type OAuthClientInfo = z.infer<typeof OAuthClientInfoSchema>

/** Keys that name a secret by reference; the registry takes secrets inline (or as `${VAR}`) instead. */
const isReferenceKey = (key: string) => /Ref$/.test(key) && key !== 'oauthProviderRef'

function strictAuthObject<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== 'unrecognized_keys') return undefined
      const references = issue.keys.filter(isReferenceKey)
      if (references.length > 0) {
        return `${references.join(', ')}: secrets are given inline (for example "clientSecret": "\${CLIENT_SECRET}"), not by reference`
      }
      return `unknown ${issue.keys.length === 1 ? 'field' : 'fields'} ${issue.keys.join(', ')}`
    }
  })
}

const urlString = z
  .string()
  .refine((value) => /^https?:\/\//.test(value) && URL.canParse(value), 'must be an http:// or https:// URL')
const scopes = z.array(z.string().min(1)).optional()
const callback = <A>() =>
  z.custom<(value: A) => void | Promise<void>>((value) => typeof value === 'function', 'must be a function').optional()

export const NoAuthSchema = strictAuthObject({ mode: z.literal('none') })
export const ApiKeyAuthSchema = strictAuthObject({
  mode: z.literal('apiKey'),
  key: z.string().min(1, 'the API key is empty'),
  headerName: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
    .optional(),
  valuePrefix: z.string().optional()
})
/** JWS algorithms of a private_key_jwt assertion (RFC 7518), by the key they sign with: RSA, RSA-PSS, EC, Ed25519. */
export const SIGNING_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA'
] as const
/** A PEM private key; as written in a file (what the MCP page checks), also a placeholder for one (`${keychain:…}`). */
const pemPrivateKey = z
  .string()
  .refine(
    (value) =>
      /^\s*-----BEGIN ([A-Z]+ )?PRIVATE KEY-----[\s\S]+-----END ([A-Z]+ )?PRIVATE KEY-----\s*$/.test(value) ||
      /^\$\{[^}]+\}$/.test(value),
    'must be a PEM private key (-----BEGIN PRIVATE KEY-----…)'
  )
/**
 * The client-credentials grant, the client authenticated with its secret (client_secret_basic) or with an assertion
 * signed by its private key (private_key_jwt, RFC 7523). Without tokenUrl the token endpoint is discovered from the
 * server (RFC 9728, then RFC 8414 / OpenID Connect metadata).
 */
export const ClientCredentialsAuthSchema = strictAuthObject({
  mode: z.literal('clientCredentials'),
  tokenUrl: urlString.optional(),
  clientId: z.string().min(1, 'clientId is empty'),
  clientSecret: z.string().min(1, 'clientSecret is empty').optional(),
  privateKey: pemPrivateKey.optional(),
  signingAlgorithm: z.enum(SIGNING_ALGORITHMS).optional(),
  scopes,
  audience: z.string().optional(),
  resource: urlString.optional()
})
  .refine((auth) => auth.clientSecret !== undefined || auth.privateKey !== undefined, {
    message: 'give clientSecret (client_secret_basic) or privateKey (private_key_jwt)',
    path: ['clientSecret']
  })
  .refine((auth) => auth.clientSecret === undefined || auth.privateKey === undefined, {
    message: 'give clientSecret (client_secret_basic) or privateKey (private_key_jwt), not both',
    path: ['clientSecret']
  })
  .refine((auth) => auth.signingAlgorithm === undefined || auth.privateKey !== undefined, {
    message: 'signs the privateKey assertion: give privateKey',
    path: ['signingAlgorithm']
  })
export const AuthorizationCodeAuthSchema = strictAuthObject({
  mode: z.literal('authorizationCode'),
  scopes,
  resource: urlString.optional(),
  redirectUri: urlString.optional(),
  client: OAuthClientInfoSchema.optional(),
  tokens: OAuthTokensSchema.optional(),
  onTokensChanged: callback<OAuthTokens>(),
  onClientRegistered: callback<OAuthClientInfo>(),
  oauthProviderRef: z.string().min(1).optional()
})

export const McpAuthConfigSchema = z.discriminatedUnion(
  'mode',
  [NoAuthSchema, ApiKeyAuthSchema, ClientCredentialsAuthSchema, AuthorizationCodeAuthSchema],
  {
    error: 'auth.mode must be none, apiKey, clientCredentials or authorizationCode'
  }
)
export type McpAuthConfig = z.infer<typeof McpAuthConfigSchema>
export type AuthMode = McpAuthConfig['mode']

const timeoutMs = z
  .number()
  .int()
  .positive('timeoutMs must be a positive number of milliseconds')
  .max(600_000)
  .optional()
const stringMap = z.record(z.string(), z.string())

const httpFields = {
  transport: z.literal('http'),
  url: urlString,
  auth: McpAuthConfigSchema,
  /** Extra request headers (imported from `headers` of Claude Code, Cursor and VS Code configs). */
  headers: stringMap.optional(),
  timeoutMs,
  disabled: z.boolean().optional(),
  /** Which tools other hosts get through `syncscope mcp run` (see mcp-tool-filter.ts). */
  tools: ToolFilterSchema.optional()
}
const stdioFields = {
  transport: z.literal('stdio'),
  command: z.string().min(1, 'command is empty'),
  args: z.array(z.string()).optional(),
  env: stringMap.optional(),
  cwd: z.string().min(1).optional(),
  auth: McpAuthConfigSchema.optional(),
  timeoutMs,
  disabled: z.boolean().optional(),
  tools: ToolFilterSchema.optional()
}

const transportError = { error: 'transport must be "http" or "stdio"' }
/** One server as written in a file, where the name is the key of the `servers` map. */
export const McpServerEntrySchema = z.discriminatedUnion(
  'transport',
  [z.strictObject(httpFields), z.strictObject(stdioFields)],
  transportError
)
export type McpServerEntry = z.infer<typeof McpServerEntrySchema>

export const McpHttpServerConfigSchema = z.strictObject({ name: McpServerNameSchema, ...httpFields })
export const McpStdioServerConfigSchema = z.strictObject({ name: McpServerNameSchema, ...stdioFields })
export const McpServerConfigSchema = z.discriminatedUnion(
  'transport',
  [McpHttpServerConfigSchema, McpStdioServerConfigSchema],
  transportError
)
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>
export type McpHttpServerConfig = z.infer<typeof McpHttpServerConfigSchema>
export type McpStdioServerConfig = z.infer<typeof McpStdioServerConfigSchema>

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

/** Where an entry comes from: a config file, the host's `extraMcpServers`, or `Registry.addServer` (programmatic). */
export const SourceKindSchema = z.enum(['workspace', 'settings', 'file', 'extra', 'programmatic'])
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

/**
 * The app's client_id as the HTTPS URL of its client ID metadata document, used with authorisation servers that
 * advertise `client_id_metadata_document_supported` (an HTTPS URL with a path, as the draft and the SDK require).
 */
export const ClientMetadataUrlSchema = z.string().refine((value) => {
  if (!URL.canParse(value)) return false
  const url = new URL(value)
  return url.protocol === 'https:' && url.pathname !== '/'
}, "must be an https:// URL with a path: where the app's client ID metadata document is served")

/** The client ID metadata document URL in force, and where it is set (the CLI flag wins over settings.json). */
export const ClientMetadataSettingSchema = z.object({
  url: z.string().nullable(),
  source: z.enum(['settings', 'flag']).nullable(),
  /** The document to publish at `url`: it lists the callback of every server that logs in with the grant. */
  document: z.record(z.string(), z.unknown()).nullable()
})
export type ClientMetadataSetting = z.infer<typeof ClientMetadataSettingSchema>

const named = z.object({ name: McpServerNameSchema })

/** A placeholder a file's entry asks to have filled in: an environment variable, the home folder, a secret, an input. */
export const PlaceholderSchema = z.object({
  kind: z.enum(['env', 'userHome', 'keychain', 'input']),
  /** The variable, the secret's field (`auth.key`) or the input's id; empty for userHome. */
  name: z.string()
})
export type Placeholder = z.infer<typeof PlaceholderSchema>

/** A workspace mcp.json as the person reviews it before approving: each server, where it goes, what it asks for. */
export const WorkspaceReviewSchema = z.object({
  path: z.string(),
  /** Of the content reviewed: the approval is pinned to it. */
  sha256: z.string(),
  state: z.enum(['trusted', 'untrusted', 'changed']),
  approvedAt: z.string().nullable(),
  /** Why the file's servers cannot be read (not JSON); they are then listed as none. */
  error: z.string().nullable(),
  servers: z.array(
    z.object({
      name: z.string(),
      transport: z.enum(['http', 'stdio']).nullable(),
      /** The URL, or the command line. */
      target: z.string().nullable(),
      asks: z.array(PlaceholderSchema),
      /** The person's own entry of the same name this one overrides, and whether it is the same server. */
      overrides: z
        .object({
          source: SourceKindSchema,
          path: z.string().nullable(),
          target: z.string().nullable(),
          /** Same URL (origin + path) or command line: the stored secrets and tokens of that entry go to this one. */
          sameTarget: z.boolean()
        })
        .nullable()
    })
  )
})
export type WorkspaceReview = z.infer<typeof WorkspaceReviewSchema>

/** Another host's MCP config file (Claude Desktop/Code, VS Code, Cursor) and what `mcp export` would change in it. */
export const HostExportSchema = z.object({
  host: z.enum(['claude-desktop', 'claude-code', 'vscode', 'cursor']),
  path: z.string(),
  exists: z.boolean(),
  /** Names of the servers in the file now (ours and the host's own). */
  servers: z.array(z.string()),
  diff: z.array(z.string()),
  added: z.array(z.string()),
  updated: z.array(z.string()),
  removed: z.array(z.string()),
  conflicts: z.array(z.string()),
  beforeDigest: z.string(),
  /** Why the file cannot be exported to (not JSON, not readable). */
  error: z.string().nullable(),
  /**
   * Claude Code only: the servers' tool filters in its own form, deny rules `mcp__<server>__<pattern>` in its settings
   * (`launcherOnly`: what its rules cannot say, which `syncscope mcp run` enforces alone).
   */
  permissions: z
    .object({
      path: z.string(),
      diff: z.array(z.string()),
      added: z.array(z.string()),
      removed: z.array(z.string()),
      launcherOnly: z.array(z.string()),
      beforeDigest: z.string()
    })
    .nullable()
    .optional()
})
export type HostExport = z.infer<typeof HostExportSchema>

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
      timeoutMs: timeoutMs
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
