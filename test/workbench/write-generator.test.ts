import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listTables } from '../../src/main/db/introspect'
import { randomWriteSql } from '../../src/main/workbench/write-generator'
import type { WriteReport } from '../../src/shared/contract/shapes-workbench'
import type { TableInfo } from '../../src/shared/contract/db'
import { Shape } from '../../src/shared/shape-client'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { waitFor } from '../shape-client/support'

describe('write generator', () => {
  let server: TestShapeServer
  let tables: TableInfo[]
  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000 })
    // The app's own pool (it reads Postgres text output, as introspection expects).
    tables = await listTables(server.app.core.database().pool)
  })
  afterAll(async () => server?.close())

  const table = (name: string) => tables.find((candidate) => candidate.name === name) as TableInfo
  const writes = async (input: { table: string; count: number; kinds: string[] }) => {
    const result = await server.app.dispatch('shapesWorkbench.randomWrites', { schema: 'public', ...input })
    if (!result.ok) throw new Error(JSON.stringify(result.body))
    return result.value as WriteReport
  }
  const count = async (name: string) => Number((await server.pool.query(`SELECT count(*) FROM ${name}`)).rows[0].count)

  it('knows which writes a table allows', () => {
    expect(randomWriteSql(table('issue_watchers'), 'insert')).toBeNull()
    expect(randomWriteSql(table('UserSettings'), 'update', () => 0)).toMatch(
      /^UPDATE "UserSettings" SET "darkMode" = coalesce\(NOT "darkMode", true\)/
    )
    expect(randomWriteSql(table('users'), 'insert')).toContain('gen_random_uuid()')
  })

  it('runs random inserts and updates that a live shape receives', async () => {
    const shape = new Shape({ url: `${server.url}/v1/shape`, params: { table: 'users' } })
    void shape.start()
    await waitFor(() => shape.stream.current.phase === 'live', 'the users shape going live')
    const before = await count('users')
    expect(shape.rows.size).toBe(before)
    expect(await writes({ table: 'users', count: 4, kinds: ['insert'] })).toEqual({
      applied: { insert: 4, update: 0, delete: 0 },
      failed: 0,
      errors: []
    })
    await waitFor(() => shape.rows.size === before + 4, 'the inserted users')
    const updated = await writes({ table: 'issues', count: 5, kinds: ['update'] })
    expect(updated.applied.update).toBe(5)
    shape.stop()
  })

  it('reports what Postgres refused, and refuses unknown tables', async () => {
    const report = await writes({ table: 'projects', count: 3, kinds: ['delete'] })
    expect(report.failed).toBe(3)
    expect(report.errors[0]).toMatch(/foreign key/)
    const unknown = await server.app.dispatch('shapesWorkbench.randomWrites', {
      schema: 'public',
      table: 'nope',
      count: 1,
      kinds: ['update']
    })
    expect(unknown).toMatchObject({ ok: false, status: 400, body: { error: { code: 'unknown_table' } } })
    const cannot = await writes({ table: 'issue_watchers', count: 1, kinds: ['insert'] })
    expect(cannot.errors[0]).toMatch(/cannot insert rows of issue_watchers/)
  })
})
