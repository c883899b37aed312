import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Message, get, messages, shapeUrl } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'

/** What a subquery shape accepts and refuses, its subsets and modes, and when its clients must refetch. */
describe('subquery shapes: requests, subsets, modes, invalidation', () => {
  let server: TestShapeServer

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1000 })
    await server.pool.query(
      `CREATE TABLE sq_projects (id int PRIMARY KEY, owner_id int NOT NULL, archived boolean NOT NULL DEFAULT false, label text)`
    )
    await server.pool.query(`CREATE TABLE sq_tasks (id int PRIMARY KEY, project_id int, owner_id int, status text)`)
    await server.pool.query(
      `INSERT INTO sq_projects VALUES (1, 7, false, 'one'), (2, 8, false, 'two'), (3, 7, true, 'three')`
    )
    await server.pool.query(
      `INSERT INTO sq_tasks VALUES (10, 1, 7, 'a'), (11, 1, 8, 'b'), (20, 2, 7, 'c'), (30, 3, 9, 'd')`
    )
  })
  afterAll(async () => server?.close())

  const rejected = async (where: string, extra: Record<string, string> = {}) => {
    const response = await get(server.url, { table: 'sq_tasks', offset: '-1', where, ...extra })
    expect(response.status).toBe(400)
    return JSON.stringify(response.body)
  }

  it('13. $n inside the subquery works', async () => {
    const where = 'project_id IN (SELECT id FROM sq_projects WHERE owner_id = $1)'
    const response = await get(server.url, { table: 'sq_tasks', offset: '-1', where, 'params[1]': '7' })
    expect(response.status).toBe(200)
    expect(response.header('@handle')).toBeTruthy()
    const ids = messages(response).flatMap((message) => (message.value?.id ? [message.value.id] : []))
    expect(ids.sort()).toEqual(['10', '11', '30'])
  })

  it('13. what the reference does not allow is a 400 naming the construct', async () => {
    expect(await rejected('EXISTS (SELECT 1 FROM sq_projects)')).toContain(
      'only `value IN (SELECT ...)` sublinks are supported right now'
    )
    expect(await rejected('project_id = ANY (SELECT id FROM sq_projects)')).toContain(
      'only `value IN (SELECT ...)` sublinks are supported right now'
    )
    expect(await rejected('project_id = (SELECT id FROM sq_projects LIMIT 1)')).toContain(
      'only `value IN (SELECT ...)` sublinks are supported right now'
    )
    expect(await rejected('project_id IN (SELECT id FROM sq_projects LIMIT 1)')).toContain(
      'SELECT statement must not contain any clauses'
    )
    expect(await rejected('project_id IN (SELECT id FROM sq_projects ORDER BY id)')).toContain(
      'SELECT statement must not contain any clauses'
    )
    expect(await rejected('project_id IN (SELECT DISTINCT id FROM sq_projects)')).toContain(
      'SELECT statement must not contain any clauses'
    )
    expect(await rejected('project_id IN (SELECT p.id FROM sq_projects p JOIN sq_tasks t ON true)')).toContain(
      'Expected a single table reference'
    )
    expect(await rejected('project_id IN (SELECT id + 1 FROM sq_projects)')).toContain(
      'Expected a plain column reference'
    )
    expect(await rejected('status IN (SELECT id FROM sq_projects)')).toContain(
      'left side of `IN (SELECT ...)` has type text but subquery returns int4'
    )
    expect(await rejected('project_id IN (SELECT id FROM sq_projects WHERE owner_id = sq_tasks.owner_id)')).toContain(
      'qualified column references are not allowed'
    )
    expect(await rejected('project_id IN (SELECT id FROM nowhere)')).toContain('nowhere')
    expect(await rejected('(project_id IN (SELECT id FROM sq_projects)) = true')).toContain(
      'may only be combined with AND, OR and NOT'
    )
    expect(await rejected('project_id IN (SELECT nope FROM sq_projects)')).toContain('unknown column \\"nope\\"')
    expect(
      await rejected('project_id IN (SELECT id FROM sq_projects WHERE owner_id = $1)', { 'params[1]': 'x' })
    ).toContain('params[1]')
  })

  it('13. a subquery in a subset is a 400; a subset of a subquery shape narrows it, with tags', async () => {
    const where = 'project_id IN (SELECT id FROM sq_projects WHERE NOT archived)'
    const refused = await get(
      server.url,
      { table: 'sq_tasks', where, offset: '-1', subset__where: 'owner_id IN (SELECT owner_id FROM sq_projects)' },
      {},
      'electric'
    )
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('Subqueries are not allowed in subsets')

    const legacy = await get(
      server.url,
      {
        table: 'sq_tasks',
        where,
        offset: '-1',
        subset__where: 'owner_id = $1',
        subset__params: '{"1":"7"}',
        subset__order_by: 'id'
      },
      {},
      'electric'
    )
    expect(legacy.status).toBe(200)
    const body = legacy.body as { data: Message[] }
    expect(body.data.map((message) => message.value?.id)).toEqual(['10', '20'])
    for (const message of body.data) {
      expect(message.headers.tags).toEqual([expect.stringMatching(/^[0-9a-f]{32}$/)])
      expect(message.headers.active_conditions).toEqual([true])
    }
    const full = await get(server.url, { table: 'sq_tasks', where, offset: '-1' })
    const tagOf = (list: Message[], id: string) => list.find((message) => message.value?.id === id)?.headers.tags
    expect(tagOf(body.data, '10')).toEqual(tagOf(messages(full), '10'))

    const posted = await fetch(shapeUrl(server.url, { table: 'sq_tasks', where, offset: '-1' }), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ where: 'status <> $1', params: { 1: 'a' }, order_by: 'id DESC', limit: 1 })
    })
    expect(posted.status).toBe(200)
    const data = ((await posted.json()) as { data: Message[] }).data
    expect(data.map((message) => message.value?.id)).toEqual(['20'])
  })

  it('log=changes_only sends no snapshot rows, then moves and changes; replica=full sends whole rows with tags', async () => {
    const where = 'project_id IN (SELECT id FROM sq_projects WHERE label = $1)'
    const changesOnly = new TagClient(server.url, { table: 'sq_tasks', where, 'params[1]': 'two', log: 'changes_only' })
    const first = await changesOnly.sync()
    expect(first.filter((message) => message.key)).toEqual([])
    const full = new TagClient(server.url, { table: 'sq_tasks', where, 'params[1]': 'two', replica: 'full' })
    await full.sync()
    expect(full.ids()).toEqual(['20'])
    await server.pool.query(`UPDATE sq_projects SET label = 'two' WHERE id = 1`)
    await server.pool.query(`UPDATE sq_tasks SET status = 'c2' WHERE id = 20`)
    const expected = () =>
      idsOf(server.pool, `SELECT id FROM sq_tasks WHERE project_id IN (SELECT id FROM sq_projects WHERE label = 'two')`)
    await full.until(expected)
    await changesOnly.until(async () => ['10', '11'])
    expect(full.ids()).toEqual(await expected())
    for (let i = 0; i < 20 && !full.seen.some((message) => message.headers.operation === 'update'); i++)
      await full.sync()
    const update = full.seen.find((message) => message.headers.operation === 'update')
    expect(update?.value).toEqual({ id: '20', project_id: '2', owner_id: '7', status: 'c2' })
    expect(update?.old_value).toEqual({ status: 'c' })
    expect(update?.headers.tags).toBeDefined()
    expect(
      changesOnly.seen
        .filter((message) => message.headers.is_move_in)
        .map((message) => message.value?.id)
        .sort()
    ).toEqual(['10', '11'])
    await server.pool.query(`UPDATE sq_projects SET label = 'one' WHERE id = 1`)
  })

  it('14. a TRUNCATE of the inner or the outer table makes the shape 409 with a new handle', async () => {
    await server.pool.query('CREATE TABLE sq_groups (id int PRIMARY KEY, live boolean NOT NULL)')
    await server.pool.query('CREATE TABLE sq_items (id int PRIMARY KEY, group_id int)')
    await server.pool.query('INSERT INTO sq_groups VALUES (1, true); INSERT INTO sq_items VALUES (1, 1)')
    const shape = { table: 'sq_items', where: 'group_id IN (SELECT id FROM sq_groups WHERE live)' }
    for (const table of ['sq_groups', 'sq_items']) {
      const client = new TagClient(server.url, shape)
      await client.sync()
      await server.pool.query(`TRUNCATE ${table}`)
      await expect(async () => {
        for (let i = 0; i < 20; i++) await client.sync()
      }).rejects.toThrow(/409/)
      await server.pool.query(
        'INSERT INTO sq_groups VALUES (1, true) ON CONFLICT DO NOTHING; INSERT INTO sq_items VALUES (1, 1) ON CONFLICT DO NOTHING'
      )
    }
  })
})
