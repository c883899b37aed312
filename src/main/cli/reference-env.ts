import type { z } from 'zod'
import { UsageError } from './output'
import { chunkBytesSchema, countSchema, portSchema, secondsSchema } from './value-schemas'

/**
 * The reference service's environment variables, as its docs name them, so `syncscope serve` replaces it in a
 * docker-compose file or `.env` unchanged. `DATABASE_URL` is read only beside one of the reference's own: alone it is
 * more often an app's variable than a sync service's, and following it would put a publication and a replication
 * slot into that database.
 */
export const REFERENCE_OWN = [
  'ELECTRIC_SECRET',
  'ELECTRIC_INSECURE',
  'ELECTRIC_PORT',
  'ELECTRIC_CACHE_MAX_AGE',
  'ELECTRIC_CACHE_STALE_AGE',
  'ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD',
  'ELECTRIC_MAX_SHAPES'
] as const

/**
 * What the reference's variables set: each read (and refused when it does not parse) only when asked, so a variable a
 * flag overrides is never in the way; undefined when unset (an empty value is unset) or when Syncscope does not stand
 * in for the reference.
 */
export interface ReferenceEnv {
  standsIn: boolean
  /** The variables set, in the reference's docs' order. */
  read: string[]
  database(): string | undefined
  secret(): string | undefined
  insecure(): boolean
  port(): number | undefined
  cacheMaxAge(): number | undefined
  cacheStaleAge(): number | undefined
  chunkBytes(): number | undefined
  maxShapes(): number | undefined
}

const valueOf = (env: NodeJS.ProcessEnv, name: string): string | undefined =>
  env[name] === undefined || env[name] === '' ? undefined : env[name]

/** Whether the reference's own variables are there: then Syncscope stands in for it (`DATABASE_URL`, brand, secret). */
export const standsInForReference = (env: NodeJS.ProcessEnv): boolean =>
  REFERENCE_OWN.some((name) => valueOf(env, name) !== undefined)

/** A whole number exactly as written (the reference reads them with String.to_integer), then the option's bounds. */
function wholeNumber(env: NodeJS.ProcessEnv, name: string, schema: z.ZodType<number>): number | undefined {
  const raw = valueOf(env, name)
  if (raw === undefined) return undefined
  const parsed = /^\d+$/.test(raw.trim()) ? schema.safeParse(raw.trim()) : null
  if (parsed?.success) return parsed.data
  const problem = parsed?.error.issues[0]?.message ?? `${name} must be a whole number (digits only)`
  throw new UsageError(`${problem}, not ${JSON.stringify(raw)}`)
}

/** `true`/`1` or `false`/`0` (any case). The reference takes every other value as true; Syncscope refuses it. */
function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = valueOf(env, name)
  if (raw === undefined) return false
  const text = raw.trim().toLowerCase()
  if (text === 'true' || text === '1') return true
  if (text === 'false' || text === '0') return false
  throw new UsageError(`${name} must be true or false, not ${JSON.stringify(raw)}`)
}

/** A postgres:// URL with a host; the value is never repeated (it holds a password). */
function databaseUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = valueOf(env, 'DATABASE_URL')
  if (raw === undefined) return undefined
  let url: URL | null = null
  try {
    url = new URL(raw)
  } catch {
    // reported below
  }
  if (!url || !['postgres:', 'postgresql:'].includes(url.protocol) || url.hostname === '')
    throw new UsageError(
      'DATABASE_URL must be a postgres:// URL with a host, e.g. postgresql://user:password@host:5432/db'
    )
  return raw
}

/** The reference's variables in `env`; each accessor throws a UsageError naming its variable when it does not parse. */
export function referenceEnv(env: NodeJS.ProcessEnv): ReferenceEnv {
  const standsIn = standsInForReference(env)
  const number = (name: string, schema: (name: string) => z.ZodType<number>) => () =>
    standsIn ? wholeNumber(env, name, schema(name)) : undefined
  return {
    standsIn,
    read: standsIn ? ['DATABASE_URL', ...REFERENCE_OWN].filter((name) => valueOf(env, name) !== undefined) : [],
    database: () => (standsIn ? databaseUrl(env) : undefined),
    secret: () => (standsIn ? valueOf(env, 'ELECTRIC_SECRET') : undefined),
    insecure: () => standsIn && flag(env, 'ELECTRIC_INSECURE'),
    port: number('ELECTRIC_PORT', portSchema),
    cacheMaxAge: number('ELECTRIC_CACHE_MAX_AGE', secondsSchema),
    cacheStaleAge: number('ELECTRIC_CACHE_STALE_AGE', secondsSchema),
    chunkBytes: number('ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD', chunkBytesSchema),
    maxShapes: number('ELECTRIC_MAX_SHAPES', countSchema)
  }
}

/**
 * The shape API's secret when Syncscope stands in for the reference, which refuses to start without ELECTRIC_SECRET
 * unless ELECTRIC_INSECURE=true, and with both: so does Syncscope. A secret given as a flag wins over the variables.
 */
export function referenceSecret(reference: ReferenceEnv, given: { flag?: string; env?: string }): string | undefined {
  if (given.flag !== undefined || !reference.standsIn) return given.flag ?? given.env
  const secret = given.env ?? reference.secret()
  const from = given.env !== undefined ? 'SYNCSCOPE_SECRET' : 'ELECTRIC_SECRET'
  const insecure = reference.insecure()
  if (insecure && secret !== undefined)
    throw new UsageError(`${from} and ELECTRIC_INSECURE=true contradict each other: unset one`)
  if (!insecure && secret === undefined)
    throw new UsageError(
      `the reference's variables (${reference.read.join(', ')}) are set without ELECTRIC_SECRET: set ELECTRIC_SECRET to require a secret on shape requests, or ELECTRIC_INSECURE=true to serve them without one (the reference refuses to start without either too)`
    )
  return secret
}

/** Lines for stderr at start: what of the environment is not followed. */
export function referenceNotes(env: NodeJS.ProcessEnv, database: string): string[] {
  const notes: string[] = []
  if (!standsInForReference(env)) {
    if (valueOf(env, 'DATABASE_URL') !== undefined && database === 'embedded')
      notes.push(
        'DATABASE_URL is not followed without the reference\'s ELECTRIC_SECRET or ELECTRIC_INSECURE: serving the embedded Postgres (--database "$DATABASE_URL" follows it)'
      )
    return notes
  }
  const unread = Object.keys(env)
    .filter((name) => name.startsWith('ELECTRIC_') && !(REFERENCE_OWN as readonly string[]).includes(name))
    .sort()
  if (unread.length > 0) notes.push(`the reference's ${unread.join(', ')}: not read by Syncscope`)
  return notes
}

/** The banner's line when Syncscope stands in for the reference: which variables it follows, and how it answers. */
export function referenceBanner(
  env: NodeJS.ProcessEnv,
  options: { headerBrand: string; secret?: string }
): string | null {
  const reference = referenceEnv(env)
  if (!reference.standsIn) return null
  const access = options.secret === undefined ? 'no secret (ELECTRIC_INSECURE=true)' : 'a secret on every shape request'
  return `Reference env ${reference.read.join(', ')}: header brand ${options.headerBrand}, ${access}`
}
