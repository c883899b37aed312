import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { preparePrivateDataDir } from '../../src/main/data-dir'
import { clusterDirOf } from '../../src/main/db/cluster'
import { clustersRoot } from '../../src/main/db/cluster-pairing'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/main/db/embedded'
import { itWith } from '../support/facility-tests'
import { openToOthers } from '../support/file-modes'
import { removeDataDir } from '../support/postgres'
import { startTestShapeServer } from '../support/shape-server'
import { get, syncToEnd } from '../support/shape-http'

const isRoot = process.getuid?.() === 0
const modeOf = (path: string) => statSync(path).mode & 0o777

async function refusal(url: string, password: string): Promise<string | undefined> {
  const parsed = new URL(url)
  const client = new pg.Client({
    host: parsed.hostname,
    port: Number(parsed.port),
    user: 'postgres',
    password,
    database: 'postgres'
  })
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.end()
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  }
}

/** Every process's argv, as any local user reads it in `ps`. */
function everyCommandLine(): string[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
      } catch {
        return ''
      }
    })
}

/** pids of the processes whose working folder is the cluster (Postgres runs there). */
function postgresPids(clusterDir: string): string[] {
  return readdirSync('/proc').filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(clusterDir)
    } catch {
      return false
    }
  })
}

describe('the embedded Postgres is not a door for other local users', () => {
  let root: string
  let postgres: EmbeddedPostgresHandle
  const secretInEnv = 'sentinel-secret-in-the-environment'

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'syncscope-pg-security-'))
    process.env.SYNCSCOPE_SECRET = secretInEnv
    postgres = await startEmbeddedPostgres({ dataDir: join(root, 'postgres') })
  })
  afterAll(async () => {
    delete process.env.SYNCSCOPE_SECRET
    await postgres?.stop()
    await removeDataDir(root)
  })

  it('has its own random password, kept 0600, and refuses the old built-in one', async () => {
    const password = decodeURIComponent(new URL(postgres.url).password)
    expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/)
    const file = join(postgres.dataDir, 'syncscope-password')
    expect(readFileSync(file, 'utf8')).toBe(password)
    expect(modeOf(file)).toBe(0o600)
    expect(await refusal(postgres.url, 'syncscope')).toBe('28P01')
    expect(await refusal(postgres.url, password)).toBeUndefined()
  })

  it('listens on loopback TCP only, with SCRAM for every connection, and has no Unix socket', async () => {
    const client = new pg.Client(postgres.url)
    await client.connect()
    try {
      const settings = await client.query(
        "SELECT current_setting('unix_socket_directories') AS sockets, current_setting('listen_addresses') AS listen"
      )
      expect(settings.rows).toEqual([{ sockets: '', listen: '127.0.0.1' }])
      const rules = await client.query('SELECT type, address, auth_method FROM pg_hba_file_rules ORDER BY line_number')
      expect(rules.rows).toEqual([
        { type: 'host', address: '127.0.0.1', auth_method: 'scram-sha-256' },
        { type: 'host', address: '127.0.0.1', auth_method: 'scram-sha-256' }
      ])
    } finally {
      await client.end()
    }
  })

  it('puts nothing secret in any argv, and gives Postgres none of our environment', () => {
    const password = decodeURIComponent(new URL(postgres.url).password)
    const lines = everyCommandLine()
    expect(lines.some((line) => line.includes(`-D ${postgres.clusterDir}`))).toBe(true)
    expect(lines.filter((line) => line.includes(password))).toEqual([])
    const pids = postgresPids(postgres.clusterDir)
    expect(pids.length).toBeGreaterThan(0)
    for (const pid of pids) expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(secretInEnv)
  })

  itWith(['root'], 'as root: another user cannot read the password file', () => {
    const read = spawnSync('cat', [join(postgres.dataDir, 'syncscope-password')], {
      uid: 65534,
      gid: 65534,
      encoding: 'utf8'
    })
    expect(read.status).not.toBe(0)
    expect(read.stderr).toContain('Permission denied')
  })

  it('gives a cluster made with the old built-in password its own on the next start', async () => {
    const older = await mkdtemp(join(tmpdir(), 'syncscope-pg-older-'))
    const dataDir = join(older, 'postgres')
    try {
      const first = await startEmbeddedPostgres({ dataDir })
      const client = new pg.Client(first.url)
      await client.connect()
      await client.query("ALTER ROLE postgres PASSWORD 'syncscope'")
      await client.end()
      await first.stop()
      await rm(join(dataDir, 'syncscope-password'))

      const again = await startEmbeddedPostgres({ dataDir, port: first.port })
      try {
        const password = decodeURIComponent(new URL(again.url).password)
        expect(password).not.toBe('syncscope')
        expect(readFileSync(join(dataDir, 'syncscope-password'), 'utf8')).toBe(password)
        expect(await refusal(again.url, 'syncscope')).toBe('28P01')
        expect(await refusal(again.url, password)).toBeUndefined()
      } finally {
        await again.stop()
      }
    } finally {
      await removeDataDir(older)
    }
  })
})

describe('the data folder is private', () => {
  it('a data folder swept by an earlier version gets its later 0644 files (proxy.json) made private once more', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-swept-'))
    try {
      await writeFile(join(dataDir, '.private-modes'), '')
      await writeFile(join(dataDir, 'proxy.json'), '{}\n')
      await chmod(join(dataDir, 'proxy.json'), 0o644)
      await preparePrivateDataDir(dataDir)
      expect(openToOthers(dataDir)).toEqual([])
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })

  let parent: string
  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), 'syncscope-private-'))
    await chmod(parent, 0o700)
  })
  afterAll(async () => {
    await removeDataDir(join(parent, 'data'))
    await rm(parent, { recursive: true, force: true })
  })

  it('after a run every folder in it is 0700 and every file 0600, older 0644 files included, and the 0700 folder above stays 0700', async () => {
    const dataDir = join(parent, 'data')
    await mkdir(join(dataDir, 'shapes'), { recursive: true, mode: 0o755 })
    await chmod(dataDir, 0o755)
    await writeFile(join(dataDir, 'settings.json'), '{}\n', { mode: 0o644 })
    await writeFile(join(dataDir, 'sql-history.json'), '[]', { mode: 0o644 })
    await chmod(join(dataDir, 'settings.json'), 0o644)
    await chmod(join(dataDir, 'sql-history.json'), 0o644)
    // the workspace (here the data folder itself) has an mcp.json for the person to approve
    await writeFile(join(dataDir, 'mcp.json'), '{ "servers": {} }\n', { mode: 0o600 })

    const server = await startTestShapeServer({ dataDir, longPollTimeout: 1000 })
    try {
      const synced = await syncToEnd(server.url, { table: 'projects' })
      await server.pool.query("UPDATE projects SET name = 'renamed' WHERE id = 1")
      const live = await get(server.url, {
        table: 'projects',
        handle: synced.handle,
        offset: synced.offset,
        live: 'true'
      })
      expect(live.status).toBe(200)
      expect((await server.app.core.sqlConsole().run('SELECT 1')).ok).toBe(true)
      expect(
        (await server.app.dispatch('shapesWorkbench.save', { name: 'projects', definition: { table: 'projects' } })).ok
      ).toBe(true)
      const saved = await server.app.dispatch('mcp.save', {
        name: 'local',
        entry: { transport: 'http', url: 'http://127.0.0.1:9/mcp', auth: { mode: 'apiKey', key: 'k-123' } }
      })
      expect(saved.ok, JSON.stringify(saved)).toBe(true)
      // the Proxy page's start writes proxy.json (from the sample) and the proxy's signing keys
      const proxy = await server.app.dispatch('proxy.start', {})
      expect(proxy.ok, JSON.stringify(proxy)).toBe(true)
      // approving the workspace mcp.json keeps the approval in the data folder
      const review = await server.app.dispatch('mcp.workspaceReview', {})
      const sha256 = review.ok ? (review.value as { sha256: string }).sha256 : ''
      expect((await server.app.dispatch('mcp.approveWorkspace', { sha256 })).ok).toBe(true)
    } finally {
      await server.stop()
    }

    expect(modeOf(parent)).toBe(0o700)
    expect(modeOf(dataDir)).toBe(0o700)
    expect(readdirSync(dataDir)).toEqual(
      expect.arrayContaining([
        'shapes',
        'sql-history.json',
        'settings.json',
        'saved-shapes.json',
        'postgres',
        'proxy.json',
        'mcp-trust.json'
      ])
    )
    expect(openToOthers(dataDir)).toEqual([])
    const cluster = await clusterDirOf(join(dataDir, 'postgres'))
    if (isRoot) {
      // Postgres (as user postgres) could not enter the 0700 data folder: its cluster lives where it can, its own.
      expect(cluster).toMatch(new RegExp(`^${clustersRoot()}/[0-9a-f]{16}$`))
      expect(statSync(cluster).uid).not.toBe(0)
      expect(modeOf(cluster)).toBe(0o700)
    } else expect(cluster).toBe(join(dataDir, 'postgres'))
  })
})
