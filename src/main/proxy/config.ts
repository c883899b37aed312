import { isAbsolute, resolve } from 'node:path'
import { z } from 'zod'
import { HeaderBrandSchema } from '../../shared/protocol'
import { readSecretFile } from '../fs/secret-file'
import { loadParser } from '../sql'
import { canonicaliseShape, ShapeDefinitionError, type CanonicalShape } from './shape-definition'

/** Signing algorithms offered for tokens the app mints. */
export const SIGNING_ALGORITHMS = ['ES256', 'RS256', 'EdDSA', 'HS256'] as const
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number]

const roleList = z.array(z.string().min(1)).min(1)
/** Claim names whose values bind a where's `$1`, `$2`, … in order (e.g. `["sub"]` for `owner_id = $1`). */
const claimBindings = z.array(z.string().min(1)).default([])
const identifierList = z.array(z.string().min(1)).min(1)

const RowFilterSchema = z
  .object({
    /** The filter every non-privileged caller gets, with `$n` placeholders bound to `params`. */
    where: z.string().min(1),
    params: claimBindings
  })
  .strict()

const NamedShapeSchema = z
  .object({
    table: z.string().min(1),
    columns: identifierList.optional(),
    queryableColumns: identifierList.optional(),
    rowFilter: RowFilterSchema.optional(),
    /** Who may request the shape at all; absent: every authenticated caller. */
    roles: roleList.optional(),
    /** Callers with one of these roles get the shape without the row filter. */
    privilegedRoles: roleList.optional()
  })
  .strict()

const TablePolicySchema = z
  .object({
    roles: roleList.optional(),
    /** The columns a caller may ask for; the default when the caller asks for none. Absent: every column. */
    columns: identifierList.optional(),
    queryableColumns: identifierList.optional(),
    rowFilter: RowFilterSchema.optional(),
    privilegedRoles: roleList.optional()
  })
  .strict()

const UserSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().min(1),
    roles: z.array(z.string().min(1)).default([]),
    /** Extra claims put in the user's access token (e.g. `org_id`). */
    claims: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({})
  })
  .strict()

const ALGORITHM_LIST = z
  .array(z.enum([...SIGNING_ALGORITHMS, 'ES384', 'ES512', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']))
  .min(1)

export const ProxyConfigSchema = z
  .object({
    upstream: z
      .object({
        /** `local`: this app's shape server; otherwise the base URL of any shape service (…/v1/shape is appended). */
        url: z.union([z.literal('local'), z.url({ protocol: /^https?$/ })]).default('local'),
        secret: z.string().min(1).optional(),
        /** The secret kept out of this file: in a file only its owner reads (relative to this config's folder)… */
        secretFile: z.string().min(1).optional(),
        /** …or in an environment variable of the app. */
        secretEnv: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'secretEnv must be an environment variable name')
          .optional(),
        /** Extra server-owned query parameters, e.g. `source_id` of a hosted service. */
        params: z.record(z.string().min(1), z.string()).default({}),
        /** The header names the upstream speaks; default: the local server's brand, else `service`. */
        headerBrand: HeaderBrandSchema.optional()
      })
      .strict()
      .default({ url: 'local', params: {} }),
    auth: z
      .object({
        /** Read the token from `Authorization: Bearer …`. */
        header: z.boolean().default(true),
        /** Also read it from this cookie. */
        cookie: z
          .string()
          .regex(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/, 'cookie must be a cookie name')
          .optional(),
        issuer: z.string().min(1).default('syncscope-local'),
        audience: z.string().min(1).default('syncscope-proxy'),
        rolesClaim: z.string().min(1).default('roles'),
        accessTokenLifetimeSeconds: z
          .number()
          .int()
          .min(1)
          .max(7 * 86_400)
          .default(3600),
        /** Tokens of an external identity provider, verified against its JWKS. */
        jwks: z
          .object({
            url: z.url({ protocol: /^https?$/ }),
            issuer: z.string().min(1),
            audience: z.string().min(1),
            algorithms: ALGORITHM_LIST.optional()
          })
          .strict()
          .optional()
      })
      .strict()
      .refine((auth) => auth.header || auth.cookie !== undefined, {
        message: 'auth needs header: true or a cookie name',
        path: ['header']
      })
      .default({
        header: true,
        issuer: 'syncscope-local',
        audience: 'syncscope-proxy',
        rolesClaim: 'roles',
        accessTokenLifetimeSeconds: 3600
      }),
    cors: z
      .object({ origins: z.array(z.union([z.literal('*'), z.url()])).default([]) })
      .strict()
      .default({ origins: [] }),
    users: z.array(UserSchema).default([]),
    shapes: z
      .record(z.string().regex(/^[A-Za-z0-9_-]+$/, 'a shape name uses letters, digits, _ and - only'), NamedShapeSchema)
      .default({}),
    gatekeeper: z
      .object({
        algorithm: z.enum(SIGNING_ALGORITHMS).default('ES256'),
        lifetimeSeconds: z.number().int().min(1).max(86_400).default(300),
        /** The token-checking proxy's public base URL handed to clients; default: this proxy's own URL. */
        proxyUrl: z.url({ protocol: /^https?$/ }).optional(),
        tables: z.record(z.string().min(1), TablePolicySchema).default({})
      })
      .strict()
      .default({ algorithm: 'ES256', lifetimeSeconds: 300, tables: {} })
  })
  .strict()

export type ProxyConfig = z.output<typeof ProxyConfigSchema>
export type NamedShapeConfig = z.output<typeof NamedShapeSchema>
export type TablePolicy = z.output<typeof TablePolicySchema>
export type ProxyUser = z.output<typeof UserSchema>
type RowFilter = z.output<typeof RowFilterSchema>

export interface ConfigIssue {
  path: Array<string | number>
  message: string
}

export class ProxyConfigError extends Error {
  override readonly name = 'ProxyConfigError'
  constructor(readonly issues: ConfigIssue[]) {
    super(
      issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(file)'}: ${issue.message}`).join('\n')
    )
  }
}

/** A checked config: schema-valid, and every table, column list and filter parses as the shape API would read it. */
export interface LoadedConfig {
  config: ProxyConfig
  /** Named shapes with their filter already read (params still unbound). */
  shapes: Map<string, { config: NamedShapeConfig; shape: CanonicalShape }>
  /** Gatekeeper policies by canonical `schema.table`. */
  tables: Map<string, TablePolicy>
}

export const tableKey = (schema: string, name: string) => JSON.stringify([schema, name])

/** Placeholder values that make a filter checkable before any caller is known. */
const unboundParams = (filter: RowFilter | undefined) =>
  Object.fromEntries((filter?.params ?? []).map((claim, index) => [String(index + 1), `<${claim}>`]))

function checkDefinition(
  issues: ConfigIssue[],
  path: Array<string | number>,
  read: () => CanonicalShape
): CanonicalShape | null {
  try {
    return read()
  } catch (error) {
    if (!(error instanceof ShapeDefinitionError)) throw error
    // the row filter's where and params are the ones a definition error can name
    const field = error.field === 'where' || error.field === 'params' ? ['rowFilter', error.field] : [error.field]
    issues.push({ path: [...path, ...field], message: error.detail })
    return null
  }
}

/** Where `secretFile` and `secretEnv` are looked up: the config file's folder and the app's environment. */
export interface ConfigPlace {
  dir?: string
  env?: NodeJS.ProcessEnv
}

/** Puts the upstream secret named by `secretFile` or `secretEnv` into `upstream.secret`. */
function resolveUpstreamSecret(upstream: ProxyConfig['upstream'], place: ConfigPlace, issues: ConfigIssue[]): void {
  const given = (['secret', 'secretFile', 'secretEnv'] as const).filter((key) => upstream[key] !== undefined)
  if (given.length > 1) {
    issues.push({
      path: ['upstream'],
      message: `give one of secret, secretFile, secretEnv (this file gives ${given.join(', ')})`
    })
    return
  }
  if (upstream.secretFile !== undefined) {
    const path = isAbsolute(upstream.secretFile)
      ? upstream.secretFile
      : resolve(place.dir ?? process.cwd(), upstream.secretFile)
    try {
      upstream.secret = readSecretFile(path, 'the secret file')
    } catch (error) {
      issues.push({ path: ['upstream', 'secretFile'], message: (error as Error).message })
    }
  }
  if (upstream.secretEnv !== undefined) {
    const value = (place.env ?? process.env)[upstream.secretEnv]
    if (value === undefined || value === '')
      issues.push({
        path: ['upstream', 'secretEnv'],
        message: `the environment variable ${upstream.secretEnv} is not set`
      })
    else upstream.secret = value
  }
}

/** Parses and checks a config file's text; throws ProxyConfigError listing every problem. */
export async function parseProxyConfig(text: string, place: ConfigPlace = {}): Promise<LoadedConfig> {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ProxyConfigError([{ path: [], message: `not valid JSON: ${(error as Error).message}` }])
  }
  const parsed = ProxyConfigSchema.safeParse(json)
  if (!parsed.success)
    throw new ProxyConfigError(
      parsed.error.issues.map((issue) => ({
        path: issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part)),
        message: issue.message
      }))
    )
  const config = parsed.data
  await loadParser()
  const issues: ConfigIssue[] = []
  resolveUpstreamSecret(config.upstream, place, issues)
  const shapes: LoadedConfig['shapes'] = new Map()
  for (const [name, shapeConfig] of Object.entries(config.shapes)) {
    const shape = checkDefinition(issues, ['shapes', name], () =>
      canonicaliseShape({
        ...shapeConfig,
        where: shapeConfig.rowFilter?.where,
        params: unboundParams(shapeConfig.rowFilter)
      })
    )
    if (shape) shapes.set(name, { config: shapeConfig, shape })
  }
  const tables: LoadedConfig['tables'] = new Map()
  for (const [table, policy] of Object.entries(config.gatekeeper.tables)) {
    const path = ['gatekeeper', 'tables', table]
    const shape = checkDefinition(issues, path, () =>
      canonicaliseShape({
        table,
        columns: policy.columns,
        queryableColumns: policy.queryableColumns,
        where: policy.rowFilter?.where,
        params: unboundParams(policy.rowFilter)
      })
    )
    if (!shape) continue
    const key = tableKey(shape.schema, shape.name)
    if (tables.has(key)) issues.push({ path, message: `${table} names a table that already has a policy` })
    tables.set(key, policy)
  }
  const userIds = new Set<string>()
  config.users.forEach((user, index) => {
    if (userIds.has(user.id)) issues.push({ path: ['users', index, 'id'], message: `user id ${user.id} is used twice` })
    userIds.add(user.id)
  })
  if (issues.length > 0) throw new ProxyConfigError(issues)
  return { config, shapes, tables }
}
