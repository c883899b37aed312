import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SubqueryAdmission } from '../../src/shared/contract/shapes-workbench'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

// The workbench's "why is this row in the shape": the inner rows that select an outer row's values, from the demo data
// (project 1000000000+i is archived when i % 9 = 0).
describe('shapesWorkbench.admittedBy', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer()
  })
  afterAll(async () => server?.close())

  const admittedBy = async (where: string, row: Record<string, string | null>, params: string[] = []) => {
    const result = await server.app.dispatch('shapesWorkbench.admittedBy', { where, params, row })
    if (!result.ok) throw new Error(JSON.stringify(result.body))
    return (result.value as { subqueries: SubqueryAdmission[] }).subqueries
  }

  it('names the inner row that selects the outer row’s value, with params inside the subquery', async () => {
    const [admission, ...rest] = await admittedBy(
      'project_id IN (SELECT id FROM projects WHERE NOT archived AND id <= $1) AND priority > 0',
      { id: '3', project_id: '1000000003' },
      ['1000000005']
    )
    expect(rest).toEqual([])
    expect(admission).toMatchObject({
      test: 'project_id IN (SELECT id FROM projects WHERE NOT (archived) AND id <= $1)',
      negated: false,
      columns: [{ name: 'project_id', value: '1000000003', inShape: true }],
      innerTable: 'projects',
      more: false
    })
    expect(admission?.innerRows).toHaveLength(1)
    expect(admission?.innerRows[0]).toMatchObject({ id: '1000000003', name: 'Project 3', archived: 'f' })
    // A project outside the subquery's where admits nothing.
    expect(
      (await admittedBy('project_id IN (SELECT id FROM projects WHERE NOT archived)', { project_id: '1000000009' }))[0]
        ?.innerRows
    ).toEqual([])
  })

  it('for NOT IN lists the inner rows that would exclude the row (none while it is in)', async () => {
    const where = 'project_id NOT IN (SELECT id FROM projects WHERE archived) OR owner_id = $1'
    const [inside] = await admittedBy(where, { project_id: '1000000003' }, ['00000000-0000-0000-0000-000000000000'])
    expect(inside).toMatchObject({
      negated: true,
      test: 'NOT (project_id IN (SELECT id FROM projects WHERE archived))',
      innerRows: []
    })
    const [excluded] = await admittedBy(where, { project_id: '1000000009' }, ['00000000-0000-0000-0000-000000000000'])
    expect(excluded?.innerRows.map((row) => row.id)).toEqual(['1000000009'])
  })

  it('compares a row of columns at once, and leaves nested subqueries to Postgres', async () => {
    const { rows } = await server.pool.query<{ owner_id: string }>(
      `SELECT owner_id::text FROM projects WHERE id = 1000000004`
    )
    const owner = rows[0]!.owner_id
    const where =
      '(project_id, owner_id) IN (SELECT p.id, p.owner_id FROM projects p WHERE p.owner_id IN (SELECT id FROM users WHERE karma >= $1))'
    const [admission] = await admittedBy(where, { project_id: '1000000004', owner_id: owner }, ['0'])
    expect(admission?.columns.map((column) => column.name)).toEqual(['project_id', 'owner_id'])
    expect(admission?.innerTable).toBe('projects AS p')
    expect(admission?.innerRows.map((row) => row.id)).toEqual(['1000000004'])
    expect((await admittedBy(where, { project_id: '1000000004', owner_id: owner }, ['100000']))[0]?.innerRows).toEqual(
      []
    )
  })

  it('admits nothing for a NULL value or a column the shape does not carry, and treats values as data', async () => {
    const [nulled] = await admittedBy('project_id IN (SELECT id FROM projects)', { project_id: null })
    expect(nulled).toMatchObject({ columns: [{ name: 'project_id', value: null, inShape: true }], innerRows: [] })
    const [missing] = await admittedBy('project_id IN (SELECT id FROM projects)', { id: '1' })
    expect(missing?.columns).toEqual([{ name: 'project_id', value: null, inShape: false }])
    const [hostile] = await admittedBy(
      `name IN (SELECT name FROM projects WHERE name <> $1)`,
      { name: `x' OR '1'='1` },
      [`it's`]
    )
    expect(hostile?.innerRows).toEqual([])
    const [plain] = await admittedBy(`name IN (SELECT name FROM projects WHERE name <> $1)`, { name: 'Project 7' }, [
      `it's`
    ])
    expect(plain?.innerRows.map((row) => row.name)).toEqual(['Project 7'])
  })

  it('lists at most 20 inner rows and says there are more', async () => {
    // 75 issues per project.
    const [admission] = await admittedBy('id IN (SELECT project_id FROM issues)', { id: '1000000001' })
    expect(admission?.innerRows).toHaveLength(20)
    expect(admission?.more).toBe(true)
  })

  it('returns nothing for a where without subqueries, and a 400 naming the problem for a broken one', async () => {
    expect(await admittedBy('id > 1', { id: '2' })).toEqual([])
    const broken = await server.app.dispatch('shapesWorkbench.admittedBy', {
      where: 'id IN (SELECT',
      params: [],
      row: {}
    })
    expect(broken).toMatchObject({ ok: false, status: 400, body: { error: { code: 'admitted_by_failed' } } })
    const unknown = await server.app.dispatch('shapesWorkbench.admittedBy', {
      where: 'id IN (SELECT nope FROM projects)',
      params: [],
      row: { id: '1' }
    })
    expect(unknown).toMatchObject({
      ok: false,
      status: 400,
      body: { error: { code: 'admitted_by_failed', message: expect.stringContaining('nope') } }
    })
    const params = await server.app.dispatch('shapesWorkbench.admittedBy', {
      where: 'id IN (SELECT id FROM projects WHERE id > $2)',
      params: ['1'],
      row: { id: '1' }
    })
    expect(params).toMatchObject({
      ok: false,
      status: 400,
      body: { error: { message: 'the where uses $2 but has 1 param(s)' } }
    })
  })
})
