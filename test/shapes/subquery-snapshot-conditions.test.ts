import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lockWaiters, poolOn } from '../support/commit-lag'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'

/**
 * A subquery shape's snapshot rows carry the active_conditions of the snapshot they were read in, not of the views
 * after the transactions that arrived meanwhile: those transactions' move events follow the snapshot in the log and
 * apply to the snapshot's conditions. Found by the randomized test (issue 30, seed 155701255): a row whose project
 * left one OR arm and entered the other came twice.
 */
describe('subquery shapes: snapshot rows and the transactions that arrive while the snapshot is read', () => {
  let server: TestShapeServer

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 500 })
  })
  afterAll(async () => server?.close())

  it('a row whose project moves from one OR arm to the other while the snapshot is read is inserted once', async () => {
    const admin = poolOn(server.databaseUrl)
    try {
      await admin.query('CREATE TABLE ssc_projects (id int PRIMARY KEY, owner_id int, org_id int)')
      await admin.query('CREATE TABLE ssc_pinned (project_id int PRIMARY KEY)')
      await admin.query('CREATE TABLE ssc_issues (id int PRIMARY KEY, project_id int NOT NULL)')
      await admin.query('INSERT INTO ssc_projects VALUES (23, 1, 0), (24, 2, 9)')
      await admin.query('INSERT INTO ssc_issues VALUES (26, 23), (27, 24)')
      const where =
        'project_id IN (SELECT id FROM ssc_projects WHERE owner_id = 2) OR project_id IN (SELECT id FROM ssc_projects WHERE org_id = 0) OR project_id IN (SELECT project_id FROM ssc_pinned)'
      const sql = where
      // another shape on the same tables first: they join the publication (an ALTER the lock below would hold up)
      await new TagClient(server.url, { table: 'ssc_issues', where: `${where} OR id < 0` }).sync()
      // the third subquery's table is read last: locked, it holds the snapshot transaction after its snapshot is taken
      const locker = await admin.connect()
      await locker.query('BEGIN')
      await locker.query('LOCK TABLE ssc_pinned IN ACCESS EXCLUSIVE MODE')
      const client = new TagClient(server.url, { table: 'ssc_issues', where })
      const syncing = client.sync()
      await expect.poll(() => lockWaiters(admin, 'ssc_pinned'), { timeout: 10_000 }).toHaveLength(1)
      // after the snapshot: project 23 leaves the org arm and enters the owner arm in one transaction
      await admin.query('UPDATE ssc_projects SET org_id = 5, owner_id = 2 WHERE id = 23')
      const { rows } = await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
      // the server has taken that transaction (its runtime holds it until the snapshot is read)
      await expect
        .poll(
          async () =>
            (
              await admin.query<{ done: boolean }>(
                'SELECT bool_and(confirmed_flush_lsn >= $1::pg_lsn) AS done FROM pg_replication_slots',
                [rows[0]?.lsn]
              )
            ).rows[0]?.done,
          { timeout: 10_000 }
        )
        .toBe(true)
      await locker.query('ROLLBACK')
      locker.release()
      await syncing
      await admin.query('INSERT INTO ssc_issues VALUES (28, 24)')
      await client.until(() => idsOf(admin, `SELECT id FROM ssc_issues WHERE ${sql}`))
      expect(client.anomalies).toEqual([])
      expect(client.ids()).toEqual(['26', '27', '28'])
    } finally {
      await admin.end()
    }
  })
})
