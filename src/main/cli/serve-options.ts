import { parseArgs } from 'node:util'
import { z } from 'zod'
import { DEFAULT_HEADER_BRAND, HeaderBrandSchema } from '../../shared/protocol'
import { defaultDataDir } from '../data-dir'
import { readSecretFile } from '../fs/secret-file'
import { DEFAULT_CACHE } from '../shapes/http/protocol'
import { DEFAULT_MAX_SUBQUERY_ROWS } from '../shapes/subquery/limits'
import { DEFAULT_MAX_SHAPES } from '../shapes/storage/shape-limits'
import { DEFAULT_MAX_CONNECTIONS } from '../net/connection-limit'
import { UsageError } from './output'
import { referenceEnv, referenceSecret, type ReferenceEnv } from './reference-env'
import { chunkBytesSchema, countSchema, portSchema, secondsSchema, sizeSchema } from './value-schemas'

const LOOPBACK = ['127.0.0.1', 'localhost', '::1']

/** `http://192.168.1.20:5173` (a trailing `/` is dropped) or `*`: what a browser sends as Origin. */
const corsOriginSchema = z.string().transform((value, ctx) => {
  if (value === '*') return value
  let url: URL | null = null
  try {
    url = new URL(value)
  } catch {
    // reported below
  }
  if (
    !url ||
    !['http:', 'https:'].includes(url.protocol) ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== '' ||
    url.username !== ''
  ) {
    ctx.addIssue({
      code: 'custom',
      message: `--cors-origin ${value} is not an origin: give scheme, host and port, e.g. http://192.168.1.20:5173 (or * for every origin)`
    })
    return z.NEVER
  }
  return url.origin
})

const allowedHostSchema = z
  .string()
  .regex(
    /^([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])$/,
    '--allowed-host must be a host name or address without scheme or port, e.g. devbox.local or 192.168.1.10'
  )

export const ServeOptionsSchema = z
  .object({
    port: portSchema('--port').default(3000),
    host: z.string().min(1).default('127.0.0.1'),
    database: z
      .string()
      .default('embedded')
      .refine(
        (value) => value === 'embedded' || /^postgres(ql)?:\/\//.test(value),
        '--database must be `embedded` or a postgres:// URL'
      ),
    dataDir: z
      .string()
      .min(1)
      .default(() => defaultDataDir()),
    workspace: z
      .string()
      .min(1)
      .default(() => process.cwd()),
    ui: z.boolean().default(false),
    headerBrand: z
      .enum(HeaderBrandSchema.options, {
        error: `--header-brand must be ${HeaderBrandSchema.options.map((brand) => `\`${brand}\``).join(' or ')}`
      })
      .default(DEFAULT_HEADER_BRAND),
    secret: z.string().min(1, '--secret must not be empty').optional(),
    corsOrigins: z.array(corsOriginSchema).default([]),
    allowedHosts: z.array(allowedHostSchema).default([]),
    longPollTimeout: z.coerce
      .number()
      .int()
      .positive('--long-poll-timeout must be a positive number of milliseconds')
      .default(20_000),
    sseKeepAlive: z.coerce
      .number()
      .int()
      .positive('--sse-keep-alive must be a positive number of milliseconds')
      .default(21_000),
    chunkBytes: chunkBytesSchema('--chunk-bytes').default(10 * 1024 * 1024),
    cacheMaxAge: secondsSchema('--cache-max-age').default(DEFAULT_CACHE.maxAge),
    cacheStaleAge: secondsSchema('--cache-stale-age').default(DEFAULT_CACHE.staleAge),
    maxSubqueryRows: countSchema('--max-subquery-rows').default(DEFAULT_MAX_SUBQUERY_ROWS),
    proxyConfig: z.string().min(1).optional(),
    proxyPort: portSchema('--proxy-port').default(3001),
    maxShapes: countSchema('--max-shapes').default(DEFAULT_MAX_SHAPES),
    /** Bytes; absent: half of what is free on the data folder's disk when the shape engine starts. */
    maxDisk: sizeSchema('--max-disk').optional(),
    maxConnections: countSchema('--max-connections').default(DEFAULT_MAX_CONNECTIONS)
  })
  .refine((options) => !options.ui || LOOPBACK.includes(options.host), {
    message: '--ui serves the app contract, which only listens on loopback: use --host 127.0.0.1',
    path: ['host']
  })

export type ServeOptions = z.infer<typeof ServeOptionsSchema>

export const SERVE_USAGE = `syncscope serve [options]
  --port N               port of the shape API (and of the UI with --ui); default 3000, 0 picks a free one
  --host H               address to bind; default 127.0.0.1 (--ui requires loopback)
  --database D           embedded (default) or a postgres:// URL with wal_level=logical
  --data-dir DIR         app data folder (embedded Postgres, shape logs, settings); default ${defaultDataDir()}
  --workspace DIR        workspace folder holding mcp.json; default the current folder
  --ui                   also serve the app UI and its contract (token-protected)
  --header-brand B       service (default) or electric (what @electric-sql/client reads)
  --secret S             require secret=S or api_secret=S on every shape request (visible in ps:
                         prefer --secret-file or SYNCSCOPE_SECRET)
  --secret-file FILE     read that secret from FILE (mode 0600; other users must not read it)
  --cors-origin O        also let pages of origin O read the shape API (repeatable; * = every origin);
                         loopback pages (http://localhost:*, 127.0.0.1, [::1]) always may
  --allowed-host NAME    also accept requests whose Host is NAME (repeatable), e.g. the machine's LAN name
  --long-poll-timeout MS live long-poll timeout; default 20000
  --sse-keep-alive MS    SSE keep-alive comment interval; default 21000
  --chunk-bytes N        size of a shape log chunk (one response); default 10485760
  --cache-max-age S      max-age of catch-up answers (for a CDN or proxy in front); default 60
  --cache-stale-age S    their stale-while-revalidate; default 300
  --max-subquery-rows N  rows one shape's subquery results may hold in memory (beyond: 400); default 1000000
  --proxy-config FILE    serve the authorising proxy and gatekeeper from this config
  --proxy-port N         port of the proxy; default 3001
  --max-shapes N         shapes kept; past it the least recently used are dropped (their clients refetch);
                         default ${DEFAULT_MAX_SHAPES}
  --max-disk SIZE        disk the shape logs may take, e.g. 20GB; past it the least recently used shapes are
                         dropped; default half of what is free on the data folder's disk at start
  --max-connections N    open connections per server (shape API and UI, proxy); more are answered 503;
                         default ${DEFAULT_MAX_CONNECTIONS}
  the reference's DATABASE_URL, ELECTRIC_SECRET, ELECTRIC_INSECURE, ELECTRIC_PORT, ELECTRIC_CACHE_MAX_AGE,
  ELECTRIC_CACHE_STALE_AGE, ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD and ELECTRIC_MAX_SHAPES are read too (flags win);
  as root, SYNCSCOPE_CLUSTERS_DIR chooses where embedded clusters live`

/**
 * The shape API secret: `--secret`, `--secret-file`, `SYNCSCOPE_SECRET` or (standing in for the reference)
 * `ELECTRIC_SECRET`, in that order; at most one option.
 */
function shapeSecret(
  values: { secret?: string; 'secret-file'?: string },
  env: NodeJS.ProcessEnv,
  reference: ReferenceEnv
): string | undefined {
  if (values.secret !== undefined && values['secret-file'] !== undefined)
    throw new UsageError('give --secret or --secret-file, not both')
  const flag =
    values['secret-file'] !== undefined ? readSecretFile(values['secret-file'], '--secret-file') : values.secret
  return referenceSecret(reference, {
    flag,
    env: env.SYNCSCOPE_SECRET === '' ? undefined : env.SYNCSCOPE_SECRET
  })
}

const SERVE_FLAGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  database: { type: 'string' },
  'data-dir': { type: 'string' },
  workspace: { type: 'string' },
  ui: { type: 'boolean' },
  'header-brand': { type: 'string' },
  secret: { type: 'string' },
  'secret-file': { type: 'string' },
  'cors-origin': { type: 'string', multiple: true },
  'allowed-host': { type: 'string', multiple: true },
  'long-poll-timeout': { type: 'string' },
  'sse-keep-alive': { type: 'string' },
  'chunk-bytes': { type: 'string' },
  'cache-max-age': { type: 'string' },
  'cache-stale-age': { type: 'string' },
  'max-subquery-rows': { type: 'string' },
  'proxy-config': { type: 'string' },
  'proxy-port': { type: 'string' },
  'max-shapes': { type: 'string' },
  'max-disk': { type: 'string' },
  'max-connections': { type: 'string' }
} as const

function parseServeArgs(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: SERVE_FLAGS
    }).values
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

/**
 * Parses `serve` arguments over the environment (SYNCSCOPE_SECRET, the reference's variables: reference-env.ts);
 * flags win. Throws a UsageError whose message names the bad option or variable.
 */
export function parseServeOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeOptions {
  const values = parseServeArgs(argv)
  const reference = referenceEnv(env)
  const parsed = ServeOptionsSchema.safeParse({
    port: values.port ?? reference.port(),
    host: values.host,
    database: values.database ?? reference.database(),
    dataDir: values['data-dir'],
    workspace: values.workspace,
    ui: values.ui,
    // what @electric-sql/client reads: a stand-in for the reference answers as it does
    headerBrand: values['header-brand'] ?? (reference.standsIn ? 'electric' : undefined),
    secret: shapeSecret(values, env, reference),
    corsOrigins: values['cors-origin'],
    allowedHosts: values['allowed-host'],
    longPollTimeout: values['long-poll-timeout'],
    sseKeepAlive: values['sse-keep-alive'],
    chunkBytes: values['chunk-bytes'] ?? reference.chunkBytes(),
    cacheMaxAge: values['cache-max-age'] ?? reference.cacheMaxAge(),
    cacheStaleAge: values['cache-stale-age'] ?? reference.cacheStaleAge(),
    maxSubqueryRows: values['max-subquery-rows'],
    proxyConfig: values['proxy-config'],
    proxyPort: values['proxy-port'],
    maxShapes: values['max-shapes'] ?? reference.maxShapes(),
    maxDisk: values['max-disk'],
    maxConnections: values['max-connections']
  })
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((issue) => issue.message).join('\n'))
  return parsed.data
}
