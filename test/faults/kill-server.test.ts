import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { findFreePort } from '../../src/main/net/free-port'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from '../support/postgres'
import { type Message, controls, get, messages } from '../support/shape-http'
import type { Rows } from './support/follow'

const BIN = resolve(__dirname, '../../bin/syncscope.js')

const SHAPES: Array<Record<string, string>> = [
  { table: 'items' },
  { table: 'items', where: 'grp = 1' },
  { table: 'items', where: 'grp IN (2, 3)' },
  { table: 'items', where: 'val > 50' },
  { table: 'items', where: 'grp = 1 AND val < 30', columns: 'id,val' },
  { table: 'items', where: "note LIKE 'n1%' OR val IS NULL", replica: 'full' }
]

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** `syncscope serve` as a child process on a fixed port, ready once it prints the shape API's URL. */
async function startServer(databaseUrl: string, dataDir: string, port: number): Promise<ChildProcess> {
  const args = ['serve', '--database', databaseUrl, '--data-dir', dataDir, '--port', String(port), '--long-poll-timeout', '1000']
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const deadline = Date.now() + 60_000
  while (!output.includes('Shape API')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`syncscope serve did not start: ${output}`)
    await sleep(50)
  }
  return child
}

async function kill9(child: ChildProcess): Promise<void> {
  const exited = new Promise((done) => child.once('exit', done))
  child.kill('SIGKILL')
  await exited
}

/**
 * A protocol client that never starts over on its own: initial sync, live long-polls, retry on network errors and
 * 5xx with the same handle and offset. Every change seen twice, or out of place, is an anomaly.
 */
function follow(base: () => string, shape: Record<string, string>, signal: AbortSignal) {
  const rows: Rows = new Map()
  const anomalies: string[] = []
  const seen = new Set<string>()
  const handles = new Set<string>()
  let conflicts = 0
  let handle = ''
  let offset = '-1'
  let live = false
  const apply = (list: Message[]) => {
    for (const message of list) {
      const key = message.key
      if (!key) continue
      const operation = message.headers.operation
      const position = message.headers.lsn === undefined ? null : `${String(message.headers.lsn)}_${String(message.headers.op_position)}_${key}`
      if (position !== null && seen.has(position)) anomalies.push(`change ${position} delivered twice`)
      if (position !== null) seen.add(position)
      if (operation === 'insert' && rows.has(key)) anomalies.push(`insert of a present ${key}`)
      if (operation !== 'insert' && !rows.has(key)) anomalies.push(`${String(operation)} of an absent ${key}`)
      if (operation === 'delete') rows.delete(key)
      else rows.set(key, { ...rows.get(key), ...message.value })
    }
  }
  const done = (async () => {
    while (!signal.aborted) {
      const params: Record<string, string> = { ...shape, offset }
      if (offset !== '-1') params.handle = handle
      if (live) params.live = 'true'
      const response = await get(base(), params, { signal }).catch(() => null)
      if (!response || response.status >= 500) {
        await sleep(100)
        continue
      }
      if (response.status === 409) {
        conflicts += 1
        rows.clear()
        seen.clear()
        offset = '-1'
        live = false
        continue
      }
      if (response.status !== 200) throw new Error(`${response.status} ${response.text}`)
      apply(messages(response))
      if (offset === '-1') handle = response.header('@handle') ?? ''
      handles.add(handle)
      offset = response.header('@offset') ?? offset
      if (controls(response).includes('up-to-date')) live = true
    }
  })().catch((error: unknown) => {
    if (!signal.aborted) throw error
  })
  return { rows, anomalies, handles, conflicts: () => conflicts, done }
}

async function expected(pool: pg.Pool, shape: Record<string, string>): Promise<Rows> {
  const columns = shape.columns ?? 'id,grp,val,note'
  const { rows } = await pool.query<Record<string, string | null>>(`SELECT ${columns} FROM items ${shape.where ? `WHERE ${shape.where}` : ''}`)
  return new Map(rows.map((row) => [`"public"."items"/"${row.id}"`, row]))
}

/** Random transactions of 1–4 inserts, updates (moving rows between shapes) and deletes. */
async function write(pool: pg.Pool, transactions: number, seed: number): Promise<void> {
  let state = seed
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state % n
  }
  for (let t = 0; t < transactions; t++) {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      for (let op = 0, ops = 1 + random(4); op < ops; op++) {
        const id = random(120)
        const kind = random(10)
        if (kind < 4) {
          await client.query('INSERT INTO items VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET grp = EXCLUDED.grp, val = EXCLUDED.val', [
            id,
            random(4),
            random(10) === 0 ? null : random(100),
            `n${random(30)}`
          ])
        } else if (kind < 8) {
          await client.query('UPDATE items SET grp = $2, val = CASE WHEN $3 THEN NULL ELSE val + $4 - 40 END WHERE id = $1', [id, random(4), random(12) === 0, random(80)])
        } else {
          await client.query('DELETE FROM items WHERE id = $1', [id])
        }
      }
      await client.query('COMMIT')
    } catch {
      await client.query('ROLLBACK').catch(() => undefined)
    } finally {
      client.release()
    }
    await sleep(random(15))
  }
}

describe('kill -9 of syncscope serve in the middle of random writes', () => {
  let database: TestPostgres | null = null
  let server: ChildProcess | null = null
  let dataDir: string | null = null
  afterEach(async () => {
    if (server && server.exitCode === null) await kill9(server)
    await database?.destroy()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  it('clients resume with their handle and offset: nothing lost, nothing twice, the rows of Postgres', async () => {
    database = await startTestPostgres()
    const pool = new pg.Pool({ connectionString: database.url, max: 4 })
    ignoreConnectionErrors(pool)
    await pool.query('CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, val int, note text)')
    await pool.query("INSERT INTO items SELECT g, g % 4, g % 100, 'n' || (g % 30) FROM generate_series(0, 59) g")
    dataDir = await mkdtemp(join(tmpdir(), 'syncscope-kill-'))
    const port = await findFreePort()
    const base = `http://127.0.0.1:${port}`
    server = await startServer(database.url, dataDir, port)

    const controller = new AbortController()
    const clients = SHAPES.map((shape) => ({ shape, ...follow(() => base, shape, controller.signal) }))
    await expect.poll(() => clients.every((client) => client.handles.size === 1), { timeout: 30_000 }).toBe(true)
    const writers = Promise.all([write(pool, 200, 7), write(pool, 200, 11)])
    for (let kill = 0; kill < 2; kill++) {
      await sleep(1500)
      await kill9(server)
      server = await startServer(database.url, dataDir, port)
    }
    await writers
    const check = new pg.Pool({ connectionString: database.url, max: 2, types: { getTypeParser: () => (value: string) => value } })
    ignoreConnectionErrors(check)
    try {
      for (const client of clients) {
        const want = await expected(check, client.shape)
        await expect.poll(() => client.rows, { timeout: 30_000, interval: 100 }).toEqual(want)
        expect(client.anomalies, JSON.stringify(client.shape)).toEqual([])
        expect(client.conflicts(), `409s of ${JSON.stringify(client.shape)}`).toBe(0)
        expect(client.handles.size).toBe(1)
      }
    } finally {
      controller.abort()
      await Promise.all(clients.map((client) => client.done))
      await check.end()
      await pool.end()
    }
  })
})
