import { z } from 'zod'
import { HeaderBrandSchema } from '../protocol'
import { call, event } from './define'

export const ConfigIssueSchema = z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })

export const UpstreamRequestSchema = z.object({
  method: z.string(),
  /** The URL the proxy built, secret masked. */
  url: z.string(),
  /** Query keys the proxy set itself. */
  serverParams: z.array(z.string())
})
export type UpstreamRequest = z.infer<typeof UpstreamRequestSchema>

/** How many exchanges main keeps (`proxy.exchanges`); the renderer's cache keeps as many. */
export const PROXY_EXCHANGES_KEPT = 100

export const ProxyExchangeSchema = z.object({
  id: z.string(),
  at: z.string(),
  method: z.string(),
  path: z.string(),
  status: z.number().int(),
  subject: z.string().nullable(),
  code: z.string().nullable(),
  message: z.string().nullable(),
  upstream: UpstreamRequestSchema.nullable()
})
export type ProxyExchange = z.infer<typeof ProxyExchangeSchema>

export const ProxyStatusSchema = z.discriminatedUnion('running', [
  z.object({ running: z.literal(false), reason: z.string(), configPath: z.string() }),
  z.object({
    running: z.literal(true),
    url: z.string(),
    configPath: z.string(),
    loadedAt: z.string(),
    /** The last reload that failed; the previous config stayed in force. */
    reloadError: z.object({ message: z.string(), issues: z.array(ConfigIssueSchema), at: z.string() }).nullable(),
    upstream: z.object({ url: z.string().nullable(), headerBrand: HeaderBrandSchema, hasSecret: z.boolean() }),
    users: z.array(z.object({ id: z.string(), name: z.string(), roles: z.array(z.string()) })),
    shapes: z.array(
      z.object({
        name: z.string(),
        table: z.string(),
        where: z.string().nullable(),
        roles: z.array(z.string()).nullable()
      })
    ),
    gatekeeperTables: z.array(z.string())
  })
])
export type ProxyStatus = z.infer<typeof ProxyStatusSchema>

const ShapeRequestSchema = z.object({
  where: z.string().min(1).optional(),
  columns: z.array(z.string().min(1)).min(1).optional(),
  params: z.record(z.string(), z.string()).optional()
})

export const ProxyTryInputSchema = z.object({
  /** A configured user to call as; null sends no credentials. */
  userId: z.string().min(1).nullable(),
  target: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('shape'), name: z.string().min(1) }),
    z.object({ kind: z.literal('gatekeeper'), table: z.string().min(1), request: ShapeRequestSchema.default({}) })
  ]),
  offset: z.string().min(1).default('-1')
})

const HttpCallSchema = z.object({
  method: z.string(),
  url: z.string(),
  status: z.number().int(),
  /** Response headers; tokens masked. */
  headers: z.array(z.tuple([z.string(), z.string()])),
  /** The response body, cut at 64 KiB; tokens masked. */
  body: z.string(),
  upstream: UpstreamRequestSchema.nullable(),
  /** What a 401 or 403 means and what the client should do. */
  explanation: z.string().nullable()
})

export const ProxyTryResultSchema = z.object({
  /** The decoded claims of the access token used (the token itself never reaches the renderer). */
  accessClaims: z.record(z.string(), z.unknown()).nullable(),
  /** The shape token's claims, when the gatekeeper issued one. */
  shapeClaims: z.record(z.string(), z.unknown()).nullable(),
  gatekeeper: HttpCallSchema.nullable(),
  shape: HttpCallSchema.nullable(),
  /** Rows in the shape response (change messages), when it is a JSON array. */
  rows: z.array(z.record(z.string(), z.unknown())).nullable()
})
export type ProxyTryResult = z.infer<typeof ProxyTryResultSchema>

export const UserTokenSchema = z.object({ token: z.string().min(1), expiresAt: z.iso.datetime() })
export type UserToken = z.infer<typeof UserTokenSchema>

export const proxyCalls = {
  'proxy.status': call(z.object({}), ProxyStatusSchema),
  /** Starts the proxy (from --proxy-config, or proxy.json in the data folder, created from the sample config). */
  'proxy.start': call(z.object({}), ProxyStatusSchema),
  /** The config file's text, the upstream secret masked. */
  'proxy.config': call(z.object({}), z.object({ path: z.string(), text: z.string() })),
  'proxy.saveConfig': call(z.object({ text: z.string().min(1) }), ProxyStatusSchema),
  'proxy.exchanges': call(z.object({}), z.array(ProxyExchangeSchema)),
  'proxy.try': call(ProxyTryInputSchema, ProxyTryResultSchema),
  /**
   * A short-lived access token (at most 2 minutes) of a test user of the proxy config, for the Shape workbench's shape
   * client to call the proxy as them; ask again when it is about to expire or on a 401.
   */
  'proxy.userToken': call(z.object({ userId: z.string().min(1) }), UserTokenSchema)
}

export const proxyEvents = {
  'proxy.exchange': event(ProxyExchangeSchema),
  'proxy.config': event(z.object({ ok: z.boolean() }))
}
