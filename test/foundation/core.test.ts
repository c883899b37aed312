import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCore, type Core } from '../../src/main/core'
import { EventBus } from '../../src/main/events'
import { removeDataDir, startTestPostgres, type TestPostgres } from '../support/postgres'

describe('core: external databases and switching', () => {
  let external: TestPostgres
  let dataDir: string
  let core: Core
  const events = new EventBus()
  const seen: string[] = []
  events.subscribe((name, payload) => seen.push(`${name}:${JSON.stringify(payload)}`))

  beforeAll(async () => {
    external = await startTestPostgres()
    dataDir = await mkdtemp(join(tmpdir(), 'syncscope-core-'))
    core = await startCore({ dataDir, database: external.url, workspaceDir: dataDir, log: () => undefined, events })
  })
  afterAll(async () => {
    await core?.close()
    await external?.destroy()
    await removeDataDir(dataDir)
  })

  it('uses an external Postgres as it is, without loading the demo', async () => {
    expect(await core.database().status()).toMatchObject({ kind: 'external', state: 'connected', dataDir: null })
    const { rows } = await core.database().pool.query("SELECT to_regclass('public.issues') AS issues")
    expect(rows[0]).toEqual({ issues: null })
  })

  it('keeps the current database when a switch fails', async () => {
    await expect(core.connect('postgres://postgres:wrong@127.0.0.1:1/postgres')).rejects.toThrow()
    expect((await core.database().status()).kind).toBe('external')
  })

  it('switches to the embedded database and says so', async () => {
    await core.connect('embedded')
    const status = await core.database().status()
    expect(status).toMatchObject({ kind: 'embedded', state: 'connected' })
    const { rows } = await core.database().pool.query('SELECT count(*) AS n FROM projects')
    expect(rows[0]).toEqual({ n: '40' })
    expect(seen).toContain('db.changed:{"reason":"connected"}')
  })
})
