import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Message, get, messages } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'

/** The acceptance behaviours of subquery shapes (notes/subqueries.md §5), against real Postgres. */
describe('subquery shapes: snapshot, move-in, move-out', () => {
  let server: TestShapeServer
  let schemaCount = 0

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1000 })
  })
  afterAll(async () => server?.close())

  /** Fresh projects/tasks tables per test, so tests share the server but no rows. */
  async function tables(): Promise<{ projects: string; tasks: string }> {
    schemaCount += 1
    const projects = `projects_${schemaCount}`
    const tasks = `tasks_${schemaCount}`
    await server.pool.query(
      `CREATE TABLE ${projects} (id int PRIMARY KEY, archived boolean NOT NULL DEFAULT false, org_id int)`
    )
    await server.pool.query(`CREATE TABLE ${tasks} (id int PRIMARY KEY, project_id int, owner_id int, status text)`)
    await server.pool.query(`INSERT INTO ${projects} (id, archived) VALUES (1, false), (2, true), (3, false)`)
    await server.pool.query(
      `INSERT INTO ${tasks} (id, project_id, owner_id, status) VALUES (10, 1, 7, 'a'), (11, 1, 8, 'b'), (20, 2, 7, 'c'), (21, 2, 8, 'd'), (22, 2, 8, 'e'), (30, 3, 9, 'f')`
    )
    return { projects, tasks }
  }

  const events = (list: Message[], name: string) => list.filter((message) => message.headers.event === name)
  const rowsOf = (list: Message[]) => list.filter((message) => message.key !== undefined)

  it('1. the initial snapshot equals Postgres, every row tagged with one tag per disjunct and its active_conditions', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const client = new TagClient(server.url, { table: tasks, where })
    const first = await client.sync()
    expect(client.ids()).toEqual(await idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`))
    for (const row of rowsOf(first)) {
      expect(row.headers.tags).toEqual([expect.stringMatching(/^[0-9a-f]{32}$/)])
      expect(row.headers.active_conditions).toEqual([true])
    }
    const byProject = new Map(rowsOf(first).map((row) => [row.value?.project_id, (row.headers.tags as string[])[0]]))
    expect(byProject.size).toBe(2)
  })

  it('2-3. a project un-archived moves its tasks in (one event, rows once, snapshot-end); archived again, one move-out and no deletes', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const expected = () => idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`)
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    const { rows } = await server.pool.query<{ xid: string }>(
      `UPDATE ${projects} SET archived = false WHERE id = 2 RETURNING pg_current_xact_id()::text AS xid`
    )
    const xid = Number(BigInt(rows[0]?.xid ?? '0') & 0xffffffffn)
    await client.until(expected)
    const moveIns = events(client.seen, 'move-in')
    expect(moveIns).toHaveLength(1)
    expect(moveIns[0]?.headers.txids).toEqual([xid])
    const moved = client.seen.filter((message) => message.headers.is_move_in === true)
    expect(moved.map((message) => message.value?.id).sort()).toEqual(['20', '21', '22'])
    const afterEvent = client.seen.slice(client.seen.indexOf(moveIns[0] as Message) + 1)
    expect(afterEvent.slice(0, 3).every((message) => message.headers.is_move_in === true)).toBe(true)
    expect(afterEvent[3]?.headers.control).toBe('snapshot-end')
    for (const message of moved) {
      expect(message.headers).not.toHaveProperty('lsn')
      expect(message.headers.active_conditions).toEqual([true])
    }
    expect(client.anomalies).toEqual([])
    expect(client.ids()).toEqual(await expected())

    const before = client.seen.length
    await server.pool.query(`UPDATE ${projects} SET archived = true WHERE id = 2`)
    await client.until(expected)
    const later = client.seen.slice(before)
    const moveOuts = events(later, 'move-out')
    expect(moveOuts).toHaveLength(1)
    expect((moveOuts[0]?.headers.patterns as Array<{ pos: number; value: string }>)[0]).toEqual({
      pos: 0,
      value: (moved[0]?.headers.tags as string[])[0]
    })
    expect(later.filter((message) => message.headers.operation === 'delete')).toEqual([])
    expect(client.ids()).toEqual(await expected())
  })

  it('4. under OR, a row the other disjunct holds stays when its project is archived; un-archiving sends a move-in and no insert for it', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived) OR owner_id = $1`
    const shape = { table: tasks, where, 'params[1]': '7' }
    const expected = () =>
      idsOf(
        server.pool,
        `SELECT id FROM ${tasks} WHERE project_id IN (SELECT id FROM ${projects} WHERE NOT archived) OR owner_id = 7`
      )
    const client = new TagClient(server.url, shape)
    await client.sync()
    expect(client.ids()).toEqual(await expected())
    const task10 = client.rows.get(`"public"."${tasks}"/"10"`)
    expect(task10?.tags).toHaveLength(2)
    expect(task10?.tags[0]).toMatch(/^[0-9a-f]{32}\/$/)
    expect(task10?.tags[1]).toBe('/1')
    expect(task10?.conditions).toEqual([true, true])

    await server.pool.query(`UPDATE ${projects} SET archived = true WHERE id = 1`)
    await client.until(expected)
    expect(client.ids()).toContain('10')
    expect(client.ids()).not.toContain('11')
    expect(client.rows.get(`"public"."${tasks}"/"10"`)?.conditions).toEqual([false, true])

    const before = client.seen.length
    await server.pool.query(`UPDATE ${projects} SET archived = false WHERE id = 1`)
    await client.until(expected)
    const later = client.seen.slice(before)
    expect(events(later, 'move-in')).toHaveLength(1)
    expect(later.filter((message) => message.headers.is_move_in).map((message) => message.value?.id)).toEqual(['11'])
    expect(client.rows.get(`"public"."${tasks}"/"10"`)?.conditions).toEqual([true, true])
    expect(client.anomalies).toEqual([])
  })

  it('5. NOT IN: archiving a project moves its tasks out, un-archiving moves them back with rows', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id NOT IN (SELECT id FROM ${projects} WHERE archived)`
    const expected = () => idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`)
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    expect(client.ids()).toEqual(await expected())
    let before = client.seen.length
    await server.pool.query(`UPDATE ${projects} SET archived = true WHERE id = 3`)
    await client.until(expected)
    expect(events(client.seen.slice(before), 'move-out')).toHaveLength(1)
    expect(client.ids()).toEqual(await expected())
    before = client.seen.length
    await server.pool.query(`UPDATE ${projects} SET archived = false WHERE id IN (2, 3)`)
    await client.until(expected)
    const later = client.seen.slice(before)
    expect(events(later, 'move-in')).toHaveLength(1)
    expect(
      later
        .filter((message) => message.headers.is_move_in)
        .map((message) => message.value?.id)
        .sort()
    ).toEqual(['20', '21', '22', '30'])
    expect(client.ids()).toEqual(await expected())
    expect(client.anomalies).toEqual([])
  })

  it('6. a new project and its task in one transaction: the task arrives exactly once', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    await server.pool.query(
      `BEGIN; INSERT INTO ${projects} (id) VALUES (4); INSERT INTO ${tasks} (id, project_id) VALUES (40, 4); COMMIT`
    )
    await client.until(() => idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`))
    expect(client.seen.filter((message) => message.key?.endsWith('/"40"'))).toHaveLength(1)
    expect(client.ids()).toContain('40')
    expect(client.anomalies).toEqual([])
  })

  it('7. writes racing a move-in are delivered once, offsets monotonic, final rows equal Postgres', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const expected = () => idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`)
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    const writes: Array<Promise<unknown>> = [server.pool.query(`UPDATE ${projects} SET archived = false WHERE id = 2`)]
    for (let i = 0; i < 10; i++)
      writes.push(server.pool.query(`UPDATE ${tasks} SET status = 's${i}' WHERE id = 2${i % 3}`))
    writes.push(server.pool.query(`INSERT INTO ${tasks} (id, project_id) VALUES (23, 2)`))
    await Promise.all(writes)
    await client.until(expected)
    expect(client.ids()).toEqual(await expected())
    const { rows } = await server.pool.query<{ id: string; status: string | null }>(
      `SELECT id::text, status FROM ${tasks} WHERE project_id = 2`
    )
    for (const row of rows)
      expect(client.rows.get(`"public"."${tasks}"/"${row.id}"`)?.value.status ?? null).toBe(row.status)
    expect(client.anomalies).toEqual([])
  })

  it('8. archiving and un-archiving in one transaction emits no move event and no row vanishes', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    const before = client.seen.length
    await server.pool.query(
      `BEGIN; UPDATE ${projects} SET archived = true WHERE id = 1; UPDATE ${projects} SET archived = false WHERE id = 1; UPDATE ${tasks} SET status = 'z' WHERE id = 10; COMMIT`
    )
    await client.until(async () => ['10', '11', '30'])
    await client.sync().catch(() => undefined)
    const later = client.seen.slice(before)
    expect(later.filter((message) => message.headers.event !== undefined)).toEqual([])
    expect(client.ids()).toEqual(['10', '11', '30'])
  })

  it('9. a task changing project: out is a delete with tags, in is an insert, between matching projects an update with removed_tags', async () => {
    const { projects, tasks } = await tables()
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    const tagOf = (id: string) => client.rows.get(`"public"."${tasks}"/"${id}"`)?.tags[0]
    const oldTag = tagOf('10')
    await server.pool.query(`UPDATE ${tasks} SET project_id = 3 WHERE id = 10`)
    const update = (await client.sync()).find((message) => message.key?.endsWith('/"10"'))
    expect(update?.headers.operation).toBe('update')
    expect(update?.headers.removed_tags).toEqual([oldTag])
    expect(update?.headers.tags).toEqual([tagOf('30')])
    await server.pool.query(`UPDATE ${tasks} SET project_id = 2 WHERE id = 10`)
    const removal = (await client.sync()).find((message) => message.key?.endsWith('/"10"'))
    expect(removal?.headers.operation).toBe('delete')
    expect(removal?.headers.tags).toEqual([tagOf('30')])
    await server.pool.query(`UPDATE ${tasks} SET project_id = 1 WHERE id = 20`)
    const insert = (await client.sync()).find((message) => message.key?.endsWith('/"20"'))
    expect(insert?.headers.operation).toBe('insert')
    expect(insert?.headers.tags).toEqual([tagOf('11')])
  })

  it("10. a NULL linking value is excluded without error, and hashes apart from the string 'NULL'", async () => {
    schemaCount += 1
    const parents = `labels_${schemaCount}`
    const children = `notes_${schemaCount}`
    await server.pool.query(
      `CREATE TABLE ${parents} (id int PRIMARY KEY, name text, live boolean NOT NULL DEFAULT true)`
    )
    await server.pool.query(`CREATE TABLE ${children} (id int PRIMARY KEY, label text)`)
    await server.pool.query(`INSERT INTO ${parents} VALUES (1, 'NULL', true), (2, NULL, true)`)
    await server.pool.query(`INSERT INTO ${children} VALUES (1, 'NULL'), (2, NULL)`)
    const where = `label IN (SELECT name FROM ${parents} WHERE live) OR id = 2`
    const client = new TagClient(server.url, { table: children, where })
    const first = await client.sync()
    expect(client.ids()).toEqual(['1', '2'])
    const [one, two] = [1, 2].map((id) => rowsOf(first).find((message) => message.value?.id === String(id)))
    expect(one?.headers.active_conditions).toEqual([true, false])
    expect(two?.headers.active_conditions).toEqual([false, true])
    expect((one?.headers.tags as string[])[0]).not.toBe((two?.headers.tags as string[])[0])
  })

  it('11. three levels: deactivating the org moves out all its tasks, reactivating moves them back', async () => {
    const { projects, tasks } = await tables()
    const orgs = `orgs_${schemaCount}`
    await server.pool.query(`CREATE TABLE ${orgs} (id int PRIMARY KEY, active boolean NOT NULL)`)
    await server.pool.query(`INSERT INTO ${orgs} VALUES (100, true), (200, true)`)
    await server.pool.query(`UPDATE ${projects} SET org_id = CASE WHEN id = 3 THEN 200 ELSE 100 END`)
    const where = `project_id IN (SELECT id FROM ${projects} WHERE org_id IN (SELECT id FROM ${orgs} WHERE active))`
    const expected = () => idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`)
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    expect(client.ids()).toEqual(await expected())
    await server.pool.query(`UPDATE ${orgs} SET active = false WHERE id = 100`)
    await client.until(expected)
    expect(client.ids()).toEqual(['30'])
    await server.pool.query(`UPDATE ${orgs} SET active = true WHERE id = 100`)
    await client.until(expected)
    expect(client.ids()).toEqual(await expected())
    await server.pool.query(`UPDATE ${projects} SET org_id = 200 WHERE id = 2`)
    await client.until(expected)
    expect(client.ids()).toEqual(await expected())
    expect(client.anomalies).toEqual([])
  })

  it('12. a row test (a, b) IN (SELECT x, y …) hashes both columns together and moves', async () => {
    const { projects, tasks } = await tables()
    const members = `members_${schemaCount}`
    await server.pool.query(
      `CREATE TABLE ${members} (id int PRIMARY KEY, project_id int, user_id int, active boolean NOT NULL)`
    )
    await server.pool.query(`INSERT INTO ${members} VALUES (1, 1, 7, true), (2, 2, 8, false)`)
    const where = `(project_id, owner_id) IN (SELECT project_id, user_id FROM ${members} WHERE active)`
    const expected = () => idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`)
    const client = new TagClient(server.url, { table: tasks, where })
    await client.sync()
    expect(client.ids()).toEqual(['10'])
    await server.pool.query(`UPDATE ${members} SET active = true WHERE id = 2`)
    await client.until(expected)
    expect(client.ids()).toEqual(['10', '21', '22'])
    await server.pool.query(`UPDATE ${members} SET active = false WHERE id = 1`)
    await client.until(expected)
    expect(client.ids()).toEqual(['21', '22'])
    void projects
  })

  it('15. tags are scoped to the handle: a rebuilt shape tags the same rows differently', async () => {
    const { projects, tasks } = await tables()
    const shape = { table: tasks, where: `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)` }
    const first = await get(server.url, { ...shape, offset: '-1' })
    const handle = first.header('@handle') ?? ''
    const tagsOf = (list: Message[]) =>
      rowsOf(list)
        .map((message) => (message.headers.tags as string[])[0])
        .sort()
    const before = tagsOf(messages(first))
    expect((await fetch(`${server.url}/v1/shape?handle=${handle}`, { method: 'DELETE' })).status).toBe(202)
    const second = await get(server.url, { ...shape, offset: '-1' })
    expect(second.header('@handle')).not.toBe(handle)
    expect(tagsOf(messages(second))).toHaveLength(before.length)
    expect(tagsOf(messages(second)).some((tag) => before.includes(tag))).toBe(false)
  })

  it('a change of a subquery table reaches the shapes whose subquery result it alters through the index of their inner wheres', async () => {
    const { projects, tasks } = await tables()
    await server.pool.query(`UPDATE ${projects} SET org_id = id + 4`)
    const clients = [5, 6, 7].map((org) => {
      const where = `project_id IN (SELECT id FROM ${projects} WHERE org_id = ${org} OR org_id IS NULL)`
      return {
        client: new TagClient(server.url, { table: tasks, where }),
        expected: () => idsOf(server.pool, `SELECT id FROM ${tasks} WHERE ${where}`)
      }
    })
    for (const { client } of clients) await client.sync()
    const writes = [
      `UPDATE ${projects} SET org_id = 6 WHERE id = 1`,
      `UPDATE ${projects} SET org_id = NULL WHERE id = 3`,
      `INSERT INTO ${projects} (id, org_id) VALUES (4, 5)`,
      `INSERT INTO ${tasks} VALUES (40, 4, 1, 'g')`,
      `UPDATE ${projects} SET id = 5 WHERE id = 2`,
      `DELETE FROM ${projects} WHERE id = 3`,
      `UPDATE ${projects} SET org_id = 7 WHERE id = 1`
    ]
    for (const write of writes) {
      await server.pool.query(write)
      for (const { client, expected } of clients) {
        await client.until(expected)
        expect(client.ids(), write).toEqual(await expected())
      }
    }
    for (const { client } of clients) expect(client.anomalies).toEqual([])
  })
})
