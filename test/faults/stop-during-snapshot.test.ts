import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TEXT_VALUES } from '../support/converge'
import { useTestDatabase } from '../support/test-database'
import { type Message, controls, get, materialise, messages, syncToEnd } from '../support/shape-http'

const BIN = resolve(__dirname, '../../bin/syncscope.js')

const database = useTestDatabase(
  [
    'CREATE TABLE life (id int PRIMARY KEY, grp int NOT NULL, pad text NOT NULL)',
    'INSERT INTO life SELECT g, g % 5, repeat(chr(97 + g % 26), 200) FROM generate_series(1, 40000) g'
  ],
  { pool: { types: TEXT_VALUES } }
)
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'syncscope-stop-'))
})

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true })
})

interface Served {
  url: string
  child: ChildProcess
  exited: Promise<number | null>
  stderr: () => string
}

/** `syncscope serve` as a process of its own, on a free port. */
async function serve(): Promise<Served> {
  const args = [
    'serve',
    '--port',
    '0',
    '--database',
    database.url,
    '--data-dir',
    dataDir,
    '--chunk-bytes',
    '20000',
    '--long-poll-timeout',
    '1000'
  ]
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((done) =>
    child.once('exit', (code, signal) => done(code ?? (signal as never)))
  )
  const deadline = Date.now() + 60_000
  for (;;) {
    const url = /Shape API\s+(http:\/\/[^/\s]+)\/v1\/shape/.exec(stdout)?.[1]
    if (url && stdout.includes('Press Ctrl+C')) return { url, child, exited, stderr: () => stderr + stdout }
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the server did not start:\n${stderr}`)
    await new Promise((done) => setTimeout(done, 50))
  }
}

async function rowsOf(where: string): Promise<Map<string, Record<string, string | null>>> {
  const { rows } = await database.pool.query<Record<string, string>>(`SELECT id, grp, pad FROM life WHERE ${where}`)
  return new Map(rows.map((row) => [`"public"."life"/"${row.id}"`, row]))
}

/** Every shape folder of the data folder, whichever database it belongs to. */
async function shapeFolders(): Promise<string[]> {
  const databases = await readdir(join(dataDir, 'shapes')).catch(() => [])
  const folders = await Promise.all(
    databases.map((name) => readdir(join(dataDir, 'shapes', name, 'shapes')).catch(() => []))
  )
  return folders.flat()
}

describe('SIGTERM while a snapshot is being built and readers are live', () => {
  it('stops cleanly, and after a restart serves no half shape and loses nothing', async () => {
    let server = await serve()
    const live = { table: 'life', where: 'grp = 1' }
    const synced = await syncToEnd(server.url, live)
    const seen: Message[] = [...synced.messages]
    const { handle } = synced
    let { offset } = synced
    // a long-poll in flight when the signal comes
    const polling = get(server.url, { ...live, handle, offset, live: 'true' }).catch(() => null)
    const building = { table: 'life', where: 'grp <> 1' }
    const first = await get(server.url, { ...building, offset: '-1' })
    expect(first.status).toBe(200)
    const halfHandle = first.header('@handle') ?? ''
    server.child.kill('SIGTERM')
    expect(await server.exited, server.stderr()).toBe(0)
    expect(server.stderr()).not.toMatch(/unhandled|TypeError|\n\s+at /i)
    const answered = await polling
    if (answered?.status === 200) {
      seen.push(...messages(answered))
      offset = answered.header('@offset') ?? offset
    }
    // the unfinished shape's files are gone with it
    expect(await shapeFolders()).not.toContain(halfHandle)
    await database.pool.query(
      "INSERT INTO life (id, grp, pad) SELECT g, 1, 'while down' FROM generate_series(50001, 50010) g"
    )
    await database.pool.query("UPDATE life SET pad = 'changed while down' WHERE id IN (1, 6, 11)")

    server = await serve()
    try {
      // the live reader goes on with its handle and gets what changed meanwhile, once; the server replays what it missed
      // from its slot, so an up-to-date may come before the replay reached those commits: it follows live until then
      const expected = await rowsOf('grp = 1')
      for (
        let up = false, deadline = Date.now() + 30_000;
        !up || (Date.now() < deadline && !isDeepStrictEqual(materialise(new Map(), seen), expected));
      ) {
        const response = await get(server.url, { ...live, handle, offset, ...(up ? { live: 'true' } : {}) })
        expect(response.status).toBe(200)
        seen.push(...messages(response))
        offset = response.header('@offset') ?? offset
        up ||= controls(response).includes('up-to-date')
      }
      expect(materialise(new Map(), seen)).toEqual(expected)
      // the half-built shape is not served: its reader refetches, and a read from -1 equals Postgres
      const old = await get(server.url, { ...building, handle: halfHandle, offset: '0_0' })
      expect(old.status).toBe(409)
      const fresh = await syncToEnd(server.url, building)
      expect(fresh.handle).not.toBe(halfHandle)
      expect(materialise(new Map(), fresh.messages)).toEqual(await rowsOf('grp <> 1'))
    } finally {
      server.child.kill('SIGTERM')
      expect(await server.exited).toBe(0)
    }
    expect(server.stderr()).not.toMatch(/unhandled|TypeError|\n\s+at /i)
  })
})
