import { describe, expect, it, vi } from 'vitest'
import type { ReplicationStream } from '../../../src/main/shapes/replication'
import { TransactionLog } from '../../support/replication'
import { useReplicationPostgres } from '../../support/replication-postgres'

const db = useReplicationPostgres()
const { follow, names } = db

describe('ensureTable', () => {
  it('adds the table to the publication with REPLICA IDENTITY FULL, and is idempotent', async () => {
    await db.pool.query(`CREATE TABLE "Odd ""name""" (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const { publicationName } = names()
    const stream = await follow(log, { publicationName })
    await stream.ensureTable('public', 'Odd "name"')
    await Promise.all([stream.ensureTable('public', 'Odd "name"'), stream.ensureTable('public', 'Odd "name"')])
    const { rows } = await db.pool.query(
      `SELECT c.relreplident, (SELECT count(*)::int FROM pg_publication_tables p WHERE p.pubname = $1 AND p.tablename = c.relname) AS published
         FROM pg_class c WHERE c.relname = 'Odd "name"'`,
      [publicationName]
    )
    expect(rows).toEqual([{ relreplident: 'f', published: 1 }])
    await expect(stream.ensureTable('public', 'missing')).rejects.toThrow(
      'table "public"."missing" does not exist (or is not a table)'
    )
  })

  it('waits for transactions that were open when the table joined the publication', async () => {
    await db.pool.query(`CREATE TABLE joined_late (id int PRIMARY KEY)`)
    await db.pool.query(`CREATE TABLE unrelated (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const lines: string[] = []
    const stream = await follow(log, { log: (line) => lines.push(line) })
    const open = await db.pool.connect()
    try {
      await open.query('BEGIN')
      await open.query('INSERT INTO unrelated VALUES (1)')
      let done = false
      const ensured = stream.ensureTable('public', 'joined_late').then(() => (done = true))
      // it found the transaction open and waits for it
      await vi.waitFor(() => expect(lines.join('\n')).toContain('"joined_late" joined the publication: waiting'), {
        timeout: 20_000
      })
      expect(done).toBe(false)
      await open.query('COMMIT')
      await ensured
    } finally {
      open.release()
    }
  })
})

describe('setup errors', () => {
  it('names the privilege a role lacks and how to grant it', async () => {
    await db.pool.query(`CREATE TABLE owned_by_postgres (id int PRIMARY KEY)`)
    await db.pool.query(`CREATE ROLE plain LOGIN PASSWORD 'plain'`)
    const url = new URL(db.server.url)
    url.username = 'plain'
    url.password = 'plain'
    const log = new TransactionLog()
    const start = (): Promise<ReplicationStream> => follow(log, { connectionString: url.toString() })

    await expect(start()).rejects.toThrow(/role "plain" may not create the publication .*GRANT CREATE ON DATABASE/)
    await db.pool.query('GRANT CREATE ON DATABASE postgres TO plain')
    await expect(start()).rejects.toThrow(
      'role "plain" lacks the REPLICATION attribute that logical replication needs: run ALTER ROLE "plain" WITH REPLICATION'
    )
    await db.pool.query('ALTER ROLE plain WITH REPLICATION')
    const stream = await start()
    await expect(stream.ensureTable('public', 'owned_by_postgres')).rejects.toThrow(
      /cannot add "public"."owned_by_postgres" to the publication "test_pub_\d+": must be owner of table owned_by_postgres; the role must own both/
    )
  })

  it('rejects a slot name Postgres would not accept', async () => {
    await expect(follow(new TransactionLog(), { slotName: 'Bad-Name' })).rejects.toThrow('slot name "Bad-Name" must be')
  })
})
