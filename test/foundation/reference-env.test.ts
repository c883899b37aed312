import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Shape, ShapeStream } from '@electric-sql/client'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { findFreePort } from '../../src/main/net/free-port'
import { endCliRuns, runCli, startServe } from '../support/cli-process'
import { get, syncToEnd } from '../support/shape-http'
import { useTestDatabase } from '../support/test-database'

/** The environment of this run without anything the reference (or Syncscope's own secret) would read. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const name of Object.keys(env))
    if (name.startsWith('ELECTRIC_') || name === 'DATABASE_URL' || name === 'SYNCSCOPE_SECRET') delete env[name]
  return env
}

const TITLE = 'x'.repeat(100)

/**
 * `syncscope serve` started with the reference's variables as a docker-compose file or `.env` would set them, each
 * seen over HTTP. The database is a test Postgres given as DATABASE_URL, as in the reference's own set-ups.
 */
describe("syncscope serve reads the reference's environment variables", () => {
  const db = useTestDatabase([
    'CREATE TABLE items (id int PRIMARY KEY, title text NOT NULL)',
    `INSERT INTO items SELECT g, '${TITLE}' FROM generate_series(1, 40) g`
  ])
  const dataDirs: string[] = []
  afterEach(async () => {
    await endCliRuns()
    // each run made a replication slot of its own: the cluster keeps at most 10
    await db.pool.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active')
  })
  afterAll(async () => {
    for (const dir of dataDirs) await rm(dir, { recursive: true, force: true })
  })

  /** `serve` on a free port with `vars` over a clean environment, a fresh data folder; the shape API's base URL. */
  async function serveWith(vars: Record<string, string>, args: string[] = ['--port', '0']) {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-reference-env-'))
    dataDirs.push(dataDir)
    const run = await startServe([...args, '--data-dir', dataDir], { ...cleanEnv(), ...vars })
    return { ...run, base: run.shapeUrl.replace(/\/v1\/shape$/, '') }
  }

  it('DATABASE_URL with ELECTRIC_INSECURE=true: follows that database, brand electric, no secret; the official client syncs', async () => {
    const serve = await serveWith({ DATABASE_URL: db.url, ELECTRIC_INSECURE: 'true' })
    expect(serve.output().stdout).toContain(
      'Reference env DATABASE_URL, ELECTRIC_INSECURE: header brand electric, no secret (ELECTRIC_INSECURE=true)'
    )
    const first = await get(serve.base, { table: 'items', offset: '-1' }, {}, 'electric')
    expect(first.status).toBe(200)
    expect(first.header('@handle')).toMatch(/.+/)

    const controller = new AbortController()
    const shape = new Shape(
      new ShapeStream({ url: serve.shapeUrl, params: { table: 'items' }, signal: controller.signal })
    )
    try {
      expect((await shape.rows).length).toBe(40)
      await db.pool.query("INSERT INTO items VALUES (41, 'through the stand-in')")
      await expect.poll(() => shape.currentRows.find((row) => row.id === 41)?.title).toBe('through the stand-in')
    } finally {
      controller.abort()
      await db.pool.query('DELETE FROM items WHERE id = 41')
    }
  })

  it('flags win: --database over DATABASE_URL, --header-brand over the electric brand', async () => {
    const serve = await serveWith(
      { DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/nowhere', ELECTRIC_INSECURE: 'true' },
      ['--port', '0', '--database', db.url, '--header-brand', 'service']
    )
    const response = await get(serve.base, { table: 'items', offset: '-1' })
    expect(response.status).toBe(200)
    expect(response.header('@handle')).toMatch(/.+/)
    expect(response.headers.get('electric-handle')).toBeNull()
  })

  it('ELECTRIC_SECRET: every shape request needs it; --secret wins over it', async () => {
    const secured = await serveWith({ DATABASE_URL: db.url, ELECTRIC_SECRET: 'from-the-env-file' })
    expect(secured.output().stdout).toContain('header brand electric, a secret on every shape request')
    expect((await get(secured.base, { table: 'items', offset: '-1' })).status).toBe(401)
    expect((await get(secured.base, { table: 'items', offset: '-1', secret: 'from-the-env-file' })).status).toBe(200)
    await endCliRuns()

    const flagged = await serveWith({ DATABASE_URL: db.url, ELECTRIC_SECRET: 'from-the-env-file' }, [
      '--port',
      '0',
      '--secret',
      'from-the-flag'
    ])
    expect((await get(flagged.base, { table: 'items', offset: '-1', secret: 'from-the-env-file' })).status).toBe(401)
    expect((await get(flagged.base, { table: 'items', offset: '-1', secret: 'from-the-flag' })).status).toBe(200)
  })

  it('ELECTRIC_PORT: the port the shape API listens on', async () => {
    const port = await findFreePort()
    const serve = await serveWith({ DATABASE_URL: db.url, ELECTRIC_INSECURE: 'true', ELECTRIC_PORT: String(port) }, [])
    expect(serve.base).toBe(`http://127.0.0.1:${port}`)
    expect((await get(`http://127.0.0.1:${port}`, { table: 'items', offset: '-1' })).status).toBe(200)
  })

  it('ELECTRIC_CACHE_MAX_AGE and ELECTRIC_CACHE_STALE_AGE: the cache headers of catch-up answers; --cache-max-age wins', async () => {
    const vars = {
      DATABASE_URL: db.url,
      ELECTRIC_INSECURE: 'true',
      ELECTRIC_CACHE_MAX_AGE: '7',
      ELECTRIC_CACHE_STALE_AGE: '11'
    }
    const serve = await serveWith(vars)
    const response = await get(serve.base, { table: 'items', offset: 'now' })
    expect(response.headers.get('cache-control')).toBe('public, max-age=7, stale-while-revalidate=11')
    await endCliRuns()

    const flagged = await serveWith(vars, ['--port', '0', '--cache-max-age', '3'])
    const again = await get(flagged.base, { table: 'items', offset: 'now' })
    expect(again.headers.get('cache-control')).toBe('public, max-age=3, stale-while-revalidate=11')
  })

  it('ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD: how much of a shape one response carries', async () => {
    const vars = { DATABASE_URL: db.url, ELECTRIC_INSECURE: 'true', ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD: '1000' }
    const serve = await serveWith(vars)
    const synced = await syncToEnd(serve.base, { table: 'items' }, 'electric')
    expect(synced.messages.filter((message) => 'operation' in message.headers)).toHaveLength(40)
    // 40 rows of over 100 bytes: a few rows a response, not all of them in one
    expect(synced.requests).toBeGreaterThan(4)
  })

  it('ELECTRIC_MAX_SHAPES: past it the least recently used shape is dropped, its client sent to refetch', async () => {
    const serve = await serveWith({ DATABASE_URL: db.url, ELECTRIC_INSECURE: 'true', ELECTRIC_MAX_SHAPES: '1' })
    const first = await syncToEnd(serve.base, { table: 'items', where: 'id <= 10' }, 'electric')
    await syncToEnd(serve.base, { table: 'items', where: 'id > 10' }, 'electric')
    const gone = await get(
      serve.base,
      { table: 'items', where: 'id <= 10', handle: first.handle, offset: first.offset },
      {},
      'electric'
    )
    expect(gone.status).toBe(409)
    expect(serve.output().stderr).toMatch(/least recently used shape\(s\) dropped: more than --max-shapes 1/)
  })
})

describe("a value of the reference's variables that does not parse", () => {
  let dataDir: string
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'syncscope-reference-env-bad-'))
  })
  afterAll(async () => {
    await endCliRuns()
    await rm(dataDir, { recursive: true, force: true })
  })

  it.each([
    [{ ELECTRIC_PORT: 'abc' }, 'ELECTRIC_PORT must be a whole number (digits only), not "abc"'],
    [{ ELECTRIC_PORT: '70000' }, 'ELECTRIC_PORT must be 0–65535, not "70000"'],
    [{ ELECTRIC_CACHE_MAX_AGE: '1m' }, 'ELECTRIC_CACHE_MAX_AGE must be a whole number (digits only), not "1m"'],
    [{ ELECTRIC_CACHE_STALE_AGE: '-5' }, 'ELECTRIC_CACHE_STALE_AGE must be a whole number (digits only), not "-5"'],
    [
      { ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD: '10' },
      'ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD must be at least 1000, not "10"'
    ],
    [{ ELECTRIC_MAX_SHAPES: '0' }, 'ELECTRIC_MAX_SHAPES must be at least 1, not "0"'],
    [{ ELECTRIC_INSECURE: 'maybe' }, 'ELECTRIC_INSECURE must be true or false, not "maybe"'],
    [
      { DATABASE_URL: 'mysql://root:hunter2@db/app' },
      'DATABASE_URL must be a postgres:// URL with a host, e.g. postgresql://user:password@host:5432/db'
    ],
    [
      { ELECTRIC_SECRET: 'abc', ELECTRIC_INSECURE: 'true' },
      'ELECTRIC_SECRET and ELECTRIC_INSECURE=true contradict each other: unset one'
    ],
    [
      { ELECTRIC_PORT: '3000', ELECTRIC_INSECURE: 'false' },
      "the reference's variables (DATABASE_URL, ELECTRIC_INSECURE, ELECTRIC_PORT) are set without ELECTRIC_SECRET: set ELECTRIC_SECRET to require a secret on shape requests, or ELECTRIC_INSECURE=true to serve them without one (the reference refuses to start without either too)"
    ]
  ])('%j: one line naming it, exit code 2', async (vars, line) => {
    const insecure = 'ELECTRIC_INSECURE' in vars || 'ELECTRIC_SECRET' in vars ? {} : { ELECTRIC_INSECURE: 'true' }
    // were the value taken, this would fail at once (nothing listens on port 1), never start a server
    const unreachable = { DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/nowhere' }
    const run = runCli(['serve', '--data-dir', dataDir], { ...cleanEnv(), ...unreachable, ...insecure, ...vars })
    expect(await run.exited).toBe(2)
    expect(run.output().stderr).toBe(`syncscope: ${line}\n`)
    expect(run.output().stdout).toBe('')
  })
})
