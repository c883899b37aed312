import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { clusterDirOf } from '../../src/main/db/cluster'
import { endServe, ignoreConnectionErrors, removeDataDir } from '../support/postgres'
import { startTestShapeServer } from '../support/shape-server'
import { changes, get, syncToEnd } from '../support/shape-http'

const BIN = resolve(__dirname, '../../bin/syncscope.js')

/** `syncscope serve` as a person runs it: its own process, its shape API address read from what it prints. */
function serve(dataDir: string) {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--data-dir', dataDir, '--long-poll-timeout', '2000'],
    {
      stdio: ['ignore', 'pipe', 'pipe']
    }
  )
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)))
  const url = vi.waitFor(
    () => {
      const match = /Shape API\s+(http:\/\/\S+)\/v1\/shape/.exec(stdout)
      if (!match) throw new Error(`not started yet; stderr: ${stderr}`)
      return match[1]!
    },
    { timeout: 120_000, interval: 100 }
  )
  return { child, exited, url, output: () => ({ stdout, stderr }) }
}

/** What `postmaster.pid` of the data folder's cluster says: the postmaster's pid and port. */
async function postmasterOf(dataDir: string): Promise<{ pid: number; port: number }> {
  const lines = readFileSync(join(await clusterDirOf(join(dataDir, 'postgres')), 'postmaster.pid'), 'utf8').split('\n')
  return { pid: Number(lines[0]), port: Number(lines[3]) }
}

async function embeddedPool(dataDir: string): Promise<pg.Pool> {
  const { port } = await postmasterOf(dataDir)
  const password = readFileSync(join(dataDir, 'postgres', 'syncscope-password'), 'utf8').trim()
  const pool = new pg.Pool({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres', max: 2 })
  ignoreConnectionErrors(pool)
  return pool
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
  } catch {
    return false
  }
}

/** One transaction per id, retried while Postgres is away (ON CONFLICT: a retried commit may have landed). */
async function insertEach(pool: pg.Pool, from: number, to: number): Promise<void> {
  for (let id = from; id <= to; id++) {
    for (let attempt = 0; ; attempt++) {
      try {
        await pool.query('INSERT INTO journal VALUES ($1, $2) ON CONFLICT DO NOTHING', [id, `entry ${id}`])
        break
      } catch (error) {
        if (attempt === 300) throw error
        await new Promise((done) => setTimeout(done, 100))
      }
    }
  }
}

/** Follows the shape live from (handle, offset) until `count` inserts have arrived in all; returns every key seen. */
async function follow(base: string, handle: string, offset: string, seen: string[], count: number): Promise<string> {
  let at = offset
  const deadline = Date.now() + 120_000
  while (seen.length < count) {
    if (Date.now() > deadline) throw new Error(`only ${seen.length} of ${count} rows arrived`)
    const response = await get(base, { table: 'journal', handle, offset: at, live: 'true' }).catch(() => null)
    if (!response || response.status >= 500) {
      await new Promise((done) => setTimeout(done, 200))
      continue
    }
    expect(response.status, response.text).toBe(200)
    seen.push(...changes(response).map((change) => change.key ?? ''))
    at = response.header('@offset') ?? at
  }
  return at
}

const ids = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, index) => `"public"."journal"/"${from + index}"`)

describe('the embedded Postgres under kill -9', () => {
  const folders: string[] = []
  const children: ChildProcess[] = []
  afterAll(async () => {
    await Promise.all(children.map(endServe))
    for (const folder of folders) await removeDataDir(folder)
  })

  it('starts again after kill -9 of syncscope serve: the Postgres it left is stopped, clients resume with their handle, nothing lost or twice', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-fault-serve-'))
    folders.push(dataDir)
    const first = serve(dataDir)
    children.push(first.child)
    const base = await first.url
    let pool = await embeddedPool(dataDir)
    await pool.query('CREATE TABLE journal (id int PRIMARY KEY, note text)')
    const synced = await syncToEnd(base, { table: 'journal' })
    const seen: string[] = []
    await insertEach(pool, 1, 20)
    const offset = await follow(base, synced.handle, synced.offset, seen, 20)
    await insertEach(pool, 21, 30)

    const leftover = await postmasterOf(dataDir)
    // while it runs, a second serve on the same folder is refused and leaves the first alone
    const intruder = serve(dataDir)
    expect(await intruder.exited).toBe(1)
    expect(intruder.output().stderr.trim().split('\n').at(-1)).toBe(
      `syncscope: another Syncscope (pid ${first.child.pid}) is using ${join(dataDir, 'postgres')}: stop it first, or give this one another --data-dir`
    )
    expect(alive(leftover.pid)).toBe(true)

    first.child.kill('SIGKILL')
    await first.exited
    expect(alive(leftover.pid)).toBe(true)
    // written while no shape server runs: the replication slot keeps them
    await insertEach(pool, 31, 40)
    await pool.end()

    const second = serve(dataDir)
    children.push(second.child)
    const again = await second.url
    expect(second.output().stderr).not.toMatch(/TypeError|undefined|\n\s+at /)
    expect(second.output().stderr).toContain(`a server left running by an earlier start (pid ${leftover.pid})`)
    expect(alive(leftover.pid)).toBe(false)
    pool = await embeddedPool(dataDir)
    await insertEach(pool, 41, 50)
    await follow(again, synced.handle, offset, seen, 50)
    expect(seen).toEqual(ids(1, 50))
    await pool.end()
    second.child.kill('SIGTERM')
    expect(await second.exited).toBe(0)
  })

  it('stops its embedded Postgres on SIGTERM even when the signal comes twice (as `timeout` or a supervisor repeats it)', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-fault-serve-'))
    folders.push(dataDir)
    const served = serve(dataDir)
    children.push(served.child)
    await served.url
    const { pid } = await postmasterOf(dataDir)
    served.child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 50))
    served.child.kill('SIGTERM')
    expect(await served.exited).toBe(0)
    expect(alive(pid)).toBe(false)
  })

  it('restarts the embedded Postgres after kill -9 of it, and a live client gets every change once', async () => {
    const lines: string[] = []
    const server = await startTestShapeServer({ longPollTimeout: 2000, log: (line) => lines.push(line) })
    folders.push(server.dataDir)
    try {
      await server.pool.query('CREATE TABLE journal (id int PRIMARY KEY, note text)')
      const synced = await syncToEnd(server.url, { table: 'journal' })
      const seen: string[] = []
      await insertEach(server.pool, 1, 10)
      const offset = await follow(server.url, synced.handle, synced.offset, seen, 10)

      const before = await postmasterOf(server.dataDir)
      const waiting = follow(server.url, synced.handle, offset, seen, 30)
      process.kill(before.pid, 'SIGKILL')
      await insertEach(server.pool, 11, 30)
      await waiting
      expect(seen).toEqual(ids(1, 30))

      const after = await postmasterOf(server.dataDir)
      expect(after.pid).not.toBe(before.pid)
      expect(after.port).toBe(before.port)
      expect(lines).toContain('embedded Postgres stopped unexpectedly (killed by SIGKILL); restarting it')
      expect(lines.some((line) => line.startsWith(`embedded Postgres is running again (pid ${after.pid}`))).toBe(true)
      const fresh = await syncToEnd(server.url, { table: 'journal' })
      expect(fresh.messages.filter((message) => message.key).length).toBe(30)
    } finally {
      await server.stop()
    }
  })
})
