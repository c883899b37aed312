import { z } from 'zod'
import { DEFAULT_HEADER_BRAND, HeaderBrandSchema } from '../../shared/protocol'
import { defaultDataDir } from '../data-dir'
import { DEFAULT_CACHE, DEFAULT_SSE_LIFETIME_MS } from '../shapes/http/protocol'
import { DEFAULT_MAX_SHAPES } from '../shapes/storage/shape-limits'
import { DEFAULT_MAX_SUBQUERY_ROWS } from '../shapes/subquery/limits'
import { DEFAULT_MAX_CONNECTIONS } from '../net/connection-limit'
import { chunkBytesSchema, countSchema, portSchema, secondsSchema, sizeSchema } from './value-schemas'

/*
 * What the app serves with, whoever starts it: `syncscope serve` parses its flags into it (cli/serve-options.ts), the
 * Electron entry fills it from settings.json; the core, the rooms and the contract handlers read it.
 */

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
    sseLifetime: z.coerce
      .number()
      .int()
      .min(1_000, '--sse-lifetime must be at least 1000 milliseconds')
      .max(3_600_000, '--sse-lifetime must be at most an hour (3600000 milliseconds)')
      .default(DEFAULT_SSE_LIFETIME_MS),
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
