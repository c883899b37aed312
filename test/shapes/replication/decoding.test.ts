import { describe, expect, it } from 'vitest'
import type { ReplicatedTransaction } from '../../../src/main/shapes/replication'
import { TransactionLog } from '../../support/replication'
import { useReplicationPostgres } from '../../support/replication-postgres'

const db = useReplicationPostgres()
const { follow, names } = db

function rowsOf(
  transactions: ReplicatedTransaction[],
  kind: 'insert' | 'update' | 'delete'
): Array<Record<string, string | null>> {
  return transactions.flatMap((tx) =>
    tx.changes.flatMap((change) => {
      if (change.kind !== kind) return []
      return [change.kind === 'delete' ? change.old : change.new]
    })
  )
}

describe('decoding', () => {
  it('hands over inserts, updates, deletes, truncates and relations with Postgres text output of every type', async () => {
    await db.pool.query(`CREATE TYPE mood AS ENUM ('sad', 'happy')`)
    await db.pool.query(`CREATE TABLE typed (
      id uuid PRIMARY KEY, t text, v varchar(10), s int2, i int4, b int8, n numeric(10, 3), flag bool,
      ts timestamptz, d date, j jsonb, tags text[], m mood, raw bytea, f float8, iv interval, nothing text)`)
    const log = new TransactionLog()
    const stream = await follow(log)
    await stream.ensureTable('public', 'typed')
    await db.pool.query(`INSERT INTO typed VALUES (
      '9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D', 'hello "world"', 'ünï', -32768, 2147483647, 9223372036854775807, 12.3, true,
      '2024-01-02 03:04:05.123+00', '2024-01-02', '{"b": [true, null], "a": 1}', ARRAY['a', 'b c', NULL], 'happy',
      '\\x0001fffe', 0.1, '1 year 2 months 3 days 4 hours', NULL)`)
    await db.pool.query(`UPDATE typed SET t = 'changed', flag = false`)
    await db.pool.query(`DELETE FROM typed`)
    await db.pool.query(`TRUNCATE typed`)
    await log.waitFor((txs) => expect(txs).toHaveLength(4))

    const [insert, update, remove, truncate] = log.transactions
    const relation = insert?.changes[0]
    expect(relation).toMatchObject({ kind: 'relation', relation: { schema: 'public', table: 'typed' } })
    if (relation?.kind !== 'relation') throw new Error('no relation message')
    expect(relation.relation.columns.map((column) => column.name)).toEqual([
      'id',
      't',
      'v',
      's',
      'i',
      'b',
      'n',
      'flag',
      'ts',
      'd',
      'j',
      'tags',
      'm',
      'raw',
      'f',
      'iv',
      'nothing'
    ])
    expect(relation.relation.columns.every((column) => column.isKey)).toBe(true)
    expect(relation.relation.columns[0]).toMatchObject({ typeOid: 2950, typeMod: -1 })
    expect(relation.relation.columns[2]).toMatchObject({ typeOid: 1043, typeMod: 14 })

    const inserted = {
      id: '9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d',
      t: 'hello "world"',
      v: 'ünï',
      s: '-32768',
      i: '2147483647',
      b: '9223372036854775807',
      n: '12.300',
      flag: 't',
      ts: '2024-01-02 03:04:05.123+00',
      d: '2024-01-02',
      j: '{"a": 1, "b": [true, null]}',
      tags: '{a,"b c",NULL}',
      m: 'happy',
      raw: '\\x0001fffe',
      f: '0.1',
      iv: 'P1Y2M3DT4H',
      nothing: null
    }
    expect(insert?.changes[1]).toMatchObject({ kind: 'insert', new: inserted })
    expect(update?.changes).toEqual([
      { kind: 'update', relation: relation.relation, old: inserted, new: { ...inserted, t: 'changed', flag: 'f' } }
    ])
    expect(remove?.changes).toEqual([
      { kind: 'delete', relation: relation.relation, old: { ...inserted, t: 'changed', flag: 'f' } }
    ])
    // TRUNCATE gives the table a new file, so pgoutput sends its Relation message again first.
    expect(truncate?.changes).toEqual([relation, { kind: 'truncate', relations: [relation.relation] }])
  })

  it('fills a TOASTed value that an update left unchanged from the old row', async () => {
    await db.pool.query(`CREATE TABLE toasty (id int PRIMARY KEY, big text, n int)`)
    await db.pool.query(`ALTER TABLE toasty ALTER COLUMN big SET STORAGE EXTERNAL`)
    const log = new TransactionLog()
    const stream = await follow(log)
    await stream.ensureTable('public', 'toasty')
    const big = 'x'.repeat(20_000)
    await db.pool.query(`INSERT INTO toasty VALUES (1, $1, 1)`, [big])
    await db.pool.query(`UPDATE toasty SET n = 2`)
    await log.waitFor((txs) => expect(txs).toHaveLength(2))
    expect(rowsOf(log.transactions, 'update')).toEqual([{ id: '1', big, n: '2' }])
  })

  it('hands over a multi-statement transaction once, with its xid and one commit LSN', async () => {
    await db.pool.query(`CREATE TABLE multi (id int PRIMARY KEY, label text)`)
    const log = new TransactionLog()
    const stream = await follow(log)
    await stream.ensureTable('public', 'multi')
    await db.pool.query(`INSERT INTO multi VALUES (0, 'before')`)
    const client = await db.pool.connect()
    let xid: string
    try {
      await client.query('BEGIN')
      await client.query(`INSERT INTO multi VALUES (1, 'one'), (2, 'two')`)
      await client.query(`UPDATE multi SET label = 'uno' WHERE id = 1`)
      await client.query(`DELETE FROM multi WHERE id = 0`)
      xid = (await client.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')).rows[0]!.xid
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    const walAfter = await stream.currentWalLsn()
    await log.waitFor((txs) => expect(txs).toHaveLength(2))

    const [first, second] = log.transactions as [ReplicatedTransaction, ReplicatedTransaction]
    expect(second.xid).toBe(Number(BigInt(xid) & 0xffffffffn))
    expect(second.changes.map((change) => change.kind)).toEqual(['insert', 'insert', 'update', 'delete'])
    expect(second.commitLsn).toBeGreaterThan(first.commitLsn)
    expect(second.commitLsn).toBeLessThan(walAfter)
    expect(Math.abs(second.commitTime.getTime() - Date.now())).toBeLessThan(60_000)
    expect(stream.lastLsn).toBe(second.commitLsn)
  })

  it('reports changes of a partition as changes of its partitioned table, also in a publication made without that', async () => {
    await db.pool.query(
      `CREATE TABLE measurements (id int, at date, v text, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)`
    )
    await db.pool.query(
      `CREATE TABLE measurements_2024 PARTITION OF measurements FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')`
    )
    const { publicationName } = names()
    await db.pool.query(`CREATE PUBLICATION ${publicationName}`)
    const log = new TransactionLog()
    const stream = await follow(log, { publicationName })
    await stream.ensureTable('public', 'measurements')
    await db.pool.query(`INSERT INTO measurements VALUES (1, '2024-05-06', 'x')`)
    await db.pool.query(`UPDATE measurements SET id = 2`)
    await log.waitFor((txs) => expect(txs).toHaveLength(2))
    const changes = log.transactions.flatMap((tx) => tx.changes.filter((change) => change.kind !== 'relation'))
    expect(changes).toMatchObject([
      { kind: 'insert', relation: { table: 'measurements' }, new: { id: '1', at: '2024-05-06', v: 'x' } },
      {
        kind: 'update',
        relation: { table: 'measurements' },
        old: { id: '1', at: '2024-05-06', v: 'x' },
        new: { id: '2', at: '2024-05-06', v: 'x' }
      }
    ])
  })

  it('carries only the key in old rows of a table published without REPLICA IDENTITY FULL', async () => {
    await db.pool.query(`CREATE TABLE keyed (id int PRIMARY KEY, label text, big text)`)
    await db.pool.query(`ALTER TABLE keyed ALTER COLUMN big SET STORAGE EXTERNAL`)
    const log = new TransactionLog()
    const { publicationName } = names()
    await follow(log, { publicationName })
    await db.pool.query(`ALTER PUBLICATION ${publicationName} ADD TABLE keyed`)
    await db.pool.query(`INSERT INTO keyed VALUES (1, 'one', $1)`, ['y'.repeat(20_000)])
    await db.pool.query(`UPDATE keyed SET label = 'uno'`)
    await db.pool.query(`UPDATE keyed SET id = 2`)
    await db.pool.query(`DELETE FROM keyed`)
    await log.waitFor((txs) => expect(txs).toHaveLength(4))
    const changes = log.transactions.slice(1).map((tx) => {
      const change = tx.changes.at(-1)
      return change?.kind === 'update' || change?.kind === 'delete' ? { ...change, relation: undefined } : change
    })
    // `big` is an unchanged TOAST value with no old value to fill it from, so it is left out.
    expect(changes).toEqual([
      { kind: 'update', relation: undefined, old: {}, new: { id: '1', label: 'uno' } },
      { kind: 'update', relation: undefined, old: { id: '1' }, new: { id: '2', label: 'uno' } },
      { kind: 'delete', relation: undefined, old: { id: '2' } }
    ])
  })
})
