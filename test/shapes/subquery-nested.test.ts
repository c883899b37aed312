import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, lockWaiters, poolOn, queueExclusiveLock } from '../support/commit-lag'
import { get } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'

/** The limit the server runs with: above the results below, below the whole projects table plus its orgs. */
const MAX_ROWS = 2000

/**
 * Nested subqueries (issue 29 item 8, issue 30): a dependency whose where has subqueries of its own holds the rows of
 * its result only, never its whole table; rows that enter it when a subquery below moves are read from Postgres with
 * the move-in. Every shape stays equal to its SELECT through the moves, and a where selecting more than
 * --max-subquery-rows is refused naming the limit.
 */
describe('nested subquery shapes hold their subqueries’ results, not their tables', () => {
  let server: TestShapeServer
  let admin: pg.Pool

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 500, maxSubqueryRows: MAX_ROWS })
    admin = poolOn(server.databaseUrl)
    await admin.query('CREATE TABLE n_regions (id int PRIMARY KEY, open boolean NOT NULL)')
    await admin.query(
      'CREATE TABLE n_orgs (id int PRIMARY KEY, region_id int, active boolean NOT NULL, blocked boolean NOT NULL)'
    )
    await admin.query('CREATE TABLE n_projects (id int PRIMARY KEY, org_id int, featured boolean NOT NULL)')
    await admin.query('CREATE TABLE n_issues (id int PRIMARY KEY, project_id int NOT NULL, title text)')
    await admin.query('INSERT INTO n_regions SELECT g, g = 1 FROM generate_series(1, 3) g')
    await admin.query('INSERT INTO n_orgs SELECT g, 1 + g % 3, g <= 2, g % 5 = 0 FROM generate_series(1, 20) g')
    // 100 projects per org; projects 500, 1000, 1500 and 2000 (all in org 1) are featured
    await admin.query('INSERT INTO n_projects SELECT g, 1 + g % 20, g % 500 = 0 FROM generate_series(1, 2000) g')
    await admin.query("INSERT INTO n_issues SELECT g, 1 + (g * 7) % 2000, 't' || g FROM generate_series(1, 600) g")
  })
  afterAll(async () => {
    await admin?.end()
    await server?.close()
  })

  /** A client of `where` on n_issues, synced, and what Postgres says it holds. */
  async function follow(where: string): Promise<{ client: TagClient; expected: () => Promise<string[]> }> {
    const client = new TagClient(server.url, { table: 'n_issues', where })
    await client.sync()
    const expected = () => idsOf(admin, `SELECT id FROM n_issues WHERE ${where}`)
    expect(client.ids()).toEqual(await expected())
    return { client, expected }
  }

  /** Runs a write, then waits until the client holds what Postgres does, with no change that did not fit. */
  async function after(
    write: string,
    { client, expected }: { client: TagClient; expected: () => Promise<string[]> }
  ): Promise<void> {
    await admin.query(write)
    await client.until(expected)
    expect(client.ids(), write).toEqual(await expected())
    expect(client.anomalies, write).toEqual([])
  }

  /** Rows each of the shape's subqueries holds in the server's memory. */
  const held = (client: TagClient): number[] =>
    server.app.rooms.shapes
      .service()
      ?.subqueryRuntime(client.handle)
      ?.views.states.map((state) => state.size) ?? []

  const count = async (sql: string): Promise<number> =>
    Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM (${sql}) s`)).rows[0]?.n)

  it('two levels: the projects subquery holds the projects of active orgs; orgs activated and deactivated, projects moved, created and deleted', async () => {
    const followed = await follow(
      'project_id IN (SELECT id FROM n_projects WHERE org_id IN (SELECT id FROM n_orgs WHERE active))'
    )
    const results = async () => [
      await count('SELECT id FROM n_orgs WHERE active'),
      await count('SELECT id FROM n_projects WHERE org_id IN (SELECT id FROM n_orgs WHERE active)')
    ]
    expect(held(followed.client)).toEqual([2, 200])
    await after('UPDATE n_orgs SET active = true WHERE id = 3', followed)
    expect(held(followed.client)).toEqual([3, 300])
    await after('UPDATE n_orgs SET active = false WHERE id = 1', followed)
    await after('UPDATE n_projects SET org_id = 3 WHERE id = 25', followed)
    await after(
      `BEGIN; INSERT INTO n_projects VALUES (5000, 4, false); UPDATE n_orgs SET active = true WHERE id = 4;
       INSERT INTO n_issues VALUES (9000, 5000, 'in a new project of an org that just became active'); COMMIT`,
      followed
    )
    await after('DELETE FROM n_projects WHERE id = 25', followed)
    expect(held(followed.client)).toEqual(await results())
    expect(held(followed.client)[1]).toBeLessThan(await count('SELECT id FROM n_projects'))
  })

  it('three levels: opening a region moves in the issues of its orgs’ projects, closing it moves them out', async () => {
    const followed = await follow(
      'project_id IN (SELECT id FROM n_projects WHERE org_id IN (SELECT id FROM n_orgs WHERE region_id IN (SELECT id FROM n_regions WHERE open)))'
    )
    await after('UPDATE n_regions SET open = true WHERE id = 2', followed)
    await after('UPDATE n_orgs SET region_id = 3 WHERE id = 3', followed)
    await after('UPDATE n_regions SET open = false WHERE id = 1', followed)
    await after('UPDATE n_regions SET open = true WHERE id = 3', followed)
  })

  it('NOT IN in the middle: blocking an org moves its projects’ issues out, unblocking one moves them in', async () => {
    const followed = await follow(
      'project_id IN (SELECT id FROM n_projects WHERE org_id NOT IN (SELECT id FROM n_orgs WHERE blocked))'
    )
    await after('UPDATE n_orgs SET blocked = true WHERE id = 2', followed)
    await after('UPDATE n_orgs SET blocked = false WHERE id = 5', followed)
    await after('UPDATE n_projects SET org_id = 10 WHERE id = 7', followed)
  })

  it('OR inside the nested subquery: featured projects stay when their org is deactivated', async () => {
    const followed = await follow(
      'project_id IN (SELECT id FROM n_projects WHERE featured OR org_id IN (SELECT id FROM n_orgs WHERE active))'
    )
    await after('UPDATE n_orgs SET active = false WHERE id = 1', followed)
    await after('UPDATE n_orgs SET active = true WHERE id = 1', followed)
    await after('UPDATE n_projects SET featured = true WHERE id = 33', followed)
  })

  it('NOT IN over a nested subquery: activating an org moves its issues out, deactivating moves them back', async () => {
    const followed = await follow(
      'project_id NOT IN (SELECT id FROM n_projects WHERE org_id IN (SELECT id FROM n_orgs WHERE active))'
    )
    await after('UPDATE n_orgs SET active = true WHERE id = 6', followed)
    await after('UPDATE n_orgs SET active = false WHERE id = 6', followed)
  })

  it('while the rows of a nested move-in are read, a change to a row entering with them arrives after the query’s snapshot: it is applied after the move-in', async () => {
    // tables of its own, so that no other shape's move-in queues on them
    await admin.query('CREATE TABLE m_orgs (id int PRIMARY KEY, active boolean NOT NULL)')
    await admin.query('CREATE TABLE m_projects (id int PRIMARY KEY, org_id int)')
    await admin.query('CREATE TABLE m_issues (id int PRIMARY KEY, project_id int NOT NULL, title text)')
    await admin.query('CREATE TABLE m_canary (id int PRIMARY KEY)')
    await admin.query('INSERT INTO m_orgs VALUES (1, true), (2, false)')
    await admin.query('INSERT INTO m_projects VALUES (10, 1), (20, 2), (21, 2)')
    await admin.query("INSERT INTO m_issues VALUES (100, 10, 'a'), (200, 20, 'b'), (210, 21, 'c')")
    const where = 'project_id IN (SELECT id FROM m_projects WHERE org_id IN (SELECT id FROM m_orgs WHERE active))'
    const client = new TagClient(server.url, { table: 'm_issues', where })
    await client.sync()
    const expected = () => idsOf(admin, `SELECT id FROM m_issues WHERE ${where}`)
    const canary = new TagClient(server.url, { table: 'm_canary' })
    await canary.sync()
    // the move-in's query queues behind a lock request on the shape's table (a writer holds the table meanwhile)
    const writer = await connect(server.databaseUrl)
    await writer.query('BEGIN')
    await writer.query("INSERT INTO m_issues VALUES (101, 10, 'holds the table for writing')")
    const issuesLock = await queueExclusiveLock(admin, server.databaseUrl, 'm_issues')
    await admin.query('UPDATE m_orgs SET active = true WHERE id = 2')
    await expect.poll(() => lockWaiters(admin, 'm_issues', [issuesLock.pid]), { timeout: 10_000 }).toHaveLength(1)
    // once its snapshot is taken, it waits for the projects of org 2 behind this lock
    const projectsLock = await connect(server.databaseUrl)
    await projectsLock.query('BEGIN')
    await projectsLock.query('LOCK TABLE m_projects IN ACCESS EXCLUSIVE MODE')
    await issuesLock.cancel()
    await expect.poll(() => lockWaiters(admin, 'm_projects'), { timeout: 10_000 }).toHaveLength(1)
    await admin.query("UPDATE m_issues SET title = 'changed after the move-in snapshot' WHERE id = 200")
    // a later transaction, seen by another shape: the server has routed the update
    await admin.query('INSERT INTO m_canary VALUES (1)')
    await canary.until(async () => ['1'])
    await projectsLock.query('ROLLBACK')
    await projectsLock.end()
    await writer.query('COMMIT')
    await writer.end()
    await admin.query("INSERT INTO m_issues VALUES (102, 10, 'sentinel')")
    await client.until(expected)
    expect(client.anomalies).toEqual([])
    expect(client.ids()).toEqual(['100', '101', '102', '200', '210'])
    expect(client.rows.get('"public"."m_issues"/"200"')?.value.title).toBe('changed after the move-in snapshot')
  })

  it('a where whose subqueries select more than --max-subquery-rows is refused with 400 naming the limit; a shape that outgrows it gets 409, then that 400', async () => {
    const refused = await get(server.url, {
      table: 'n_issues',
      where: 'project_id IN (SELECT id FROM n_projects WHERE org_id IN (SELECT id FROM n_orgs))',
      offset: '-1'
    })
    expect(refused.status).toBe(400)
    expect(refused.body).toMatchObject({
      errors: { where: [expect.stringContaining('more than 2,000 rows')] }
    })
    const where = 'project_id IN (SELECT id FROM n_projects WHERE org_id IN (SELECT id FROM n_orgs WHERE NOT blocked))'
    const client = new TagClient(server.url, { table: 'n_issues', where })
    await client.sync()
    await admin.query('INSERT INTO n_projects SELECT g, 1, false FROM generate_series(10001, 10500) g')
    const next = () =>
      client.sync().then(
        () => 'up to date',
        (error: Error) => error.message
      )
    await expect.poll(next, { timeout: 10_000 }).toMatch(/409 must-refetch/)
    const again = await get(server.url, { table: 'n_issues', where, offset: '-1' })
    expect(again.status).toBe(400)
    expect(JSON.stringify(again.body)).toContain('--max-subquery-rows')
  })
})
