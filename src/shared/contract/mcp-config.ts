import { z } from 'zod'
import { ToolFilterSchema } from './mcp-tool-filter'

// An MCP server's config record as written in a file or given by a host: its name, transport and auth.

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

export const TimeoutMsSchema = z
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
  timeoutMs: TimeoutMsSchema,
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
  timeoutMs: TimeoutMsSchema,
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

/** Where an entry comes from: a config file, the host's `extraMcpServers`, or `Registry.addServer` (programmatic). */
export const SourceKindSchema = z.enum(['workspace', 'settings', 'file', 'extra', 'programmatic'])
export type SourceKind = z.infer<typeof SourceKindSchema>
