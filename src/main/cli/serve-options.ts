import { parseArgs } from 'node:util'
import { defaultDataDir } from '../data-dir'
import { readSecretFile } from '../fs/secret-file'
import { DEFAULT_MAX_SHAPES } from '../shapes/storage/shape-limits'
import { DEFAULT_MAX_CONNECTIONS } from '../net/connection-limit'
import { ServeOptionsSchema, type ServeOptions } from '../settings/serve-options'
import { UsageError } from './output'
import { referenceEnv, referenceSecret, type ReferenceEnv } from './reference-env'

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
  --sse-lifetime MS      how long an SSE stream stays open (its max-age is a second longer); default 58000
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
  'sse-lifetime': { type: 'string' },
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
    sseLifetime: values['sse-lifetime'],
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
