import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from '../../src/main/db/database'
import { listTables } from '../../src/main/db/introspect'
import { createSqlConsole } from '../../src/main/db/sql-console'
import { removeDataDir } from '../support/postgres'

describe('embedded database with the demo schema', () => {
  let dataDir: string
  let db: Database

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'syncscope-db-'))
    db = await openDatabase({ target: 'embedded', dataDir })
  })
  afterAll(async () => {
    await db?.close()
    await removeDataDir(dataDir)
  })

  it('reports a connected embedded Postgres with wal_level=logical and a masked URL', async () => {
    const status = await db.status()
    expect(status).toMatchObject({ state: 'connected', kind: 'embedded', walLevel: 'logical', error: null })
    expect(status.serverVersion).toMatch(/^18\./)
    expect(status.url).toContain('****')
    expect(status.url).not.toContain('syncscope@')
  })

  it('lists the demo tables with columns, types, primary keys and row counts', async () => {
    const tables = await listTables(db.pool)
    const byName = Object.fromEntries(tables.map((table) => [table.name, table]))
    expect(Object.keys(byName).sort()).toEqual([
      'UserSettings',
      'comments',
      'issue_watchers',
      'issues',
      'projects',
      'users'
    ])
    expect(byName.issues?.rowCount).toBe(3000)
    expect(byName.issue_watchers?.primaryKey).toEqual(['issue_id', 'user_id'])
    expect(byName.UserSettings?.qualifiedName).toBe('"UserSettings"')
    const types = Object.fromEntries(byName.issues?.columns.map((c) => [c.name, c.type]) ?? [])
    expect(types).toMatchObject({
      id: 'integer',
      project_id: 'bigint',
      status: 'issue_status',
      estimate: 'numeric(6,1)',
      labels: 'text[]',
      metadata: 'jsonb',
      due_on: 'date',
      created_at: 'timestamp with time zone'
    })
    const id = byName.issues?.columns.find((c) => c.name === 'id')
    expect(id).toMatchObject({ isPrimaryKey: true, nullable: false })
    expect(byName.issues?.columns.find((c) => c.name === 'body')?.nullable).toBe(true)
  })

  it('runs statements, reports affected counts and Postgres errors with code and position, and keeps a history', async () => {
    const historyFile = join(dataDir, 'history.json')
    const sql = await createSqlConsole(db.pool, historyFile)
    const update = await sql.run(
      "UPDATE issues SET title = 'renamed' WHERE id IN (1, 2); SELECT title, NULL AS nothing FROM issues WHERE id = 1"
    )
    expect(update.ok).toBe(true)
    if (!update.ok) return
    expect(update.results.map((r) => [r.command, r.rowCount])).toEqual([
      ['UPDATE', 2],
      ['SELECT', 1]
    ])
    expect(update.results[1]?.rows).toEqual([['renamed', null]])
    expect(update.results[1]?.fields.map((f) => f.type)).toEqual(['character varying', 'text'])

    const failure = await sql.run('SELECT * FROM issues WHERE idd = 1')
    expect(failure).toMatchObject({
      ok: false,
      error: { code: '42703', position: 28, message: 'column "idd" does not exist' }
    })

    const many = await sql.run('SELECT generate_series(1, 1500)')
    expect(many.ok && many.results[0]?.rows.length).toBe(1000)
    expect(many.ok && many.results[0]?.truncated).toBe(true)

    expect(sql.history().map((entry) => entry.ok)).toEqual([true, false, true])
    const reopened = await createSqlConsole(db.pool, historyFile)
    expect(reopened.history()[2]?.summary).toBe('UPDATE 2; SELECT 1')
    expect(JSON.parse(await readFile(historyFile, 'utf8'))).toHaveLength(3)
  })

  it('formats every demo type as Postgres text output', async () => {
    const { rows } = await db.pool.query(
      'SELECT budget, tags, settings, archived, created_at FROM projects WHERE id = 1000000001'
    )
    expect(rows[0]).toEqual({
      budget: '1234.57',
      tags: '{team-1,private}',
      settings: '{"color": "green", "limits": {"wip": 1}}',
      archived: 'f',
      created_at: '2024-02-02 09:30:00+00'
    })
  })

  it('keeps the data on the next start and does not seed twice', async () => {
    await db.pool.query("DELETE FROM comments WHERE body LIKE 'Comment 1 %'")
    await db.close()
    db = await openDatabase({ target: 'embedded', dataDir })
    const { rows } = await db.pool.query<{ count: string }>('SELECT count(*) FROM comments')
    expect(rows[0]?.count).toBe('5999')
  })

  it('refuses an unreachable external database with a clear error', async () => {
    await expect(openDatabase({ target: 'postgres://nobody:pw@127.0.0.1:1/none', dataDir })).rejects.toThrow(
      /ECONNREFUSED/
    )
  })
})
