import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { startTestPostgres, type TestPostgres } from '../../../../test/support/postgres'
import { ignoreConnectionErrors } from '../../../../test/support/postgres'
import {
  expectCommitOrder,
  idRange,
  insertedIds,
  sentThrough,
  TransactionLog
} from '../../../../test/support/replication'
import {
  parseLsn,
  type ReplicatedTransaction,
  type ReplicationOptions,
  type ReplicationStream,
  startReplication
} from '.'

let server: TestPostgres
let pool: pg.Pool
const running: ReplicationStream[] = []
let slotCount = 0

beforeAll(async () => {
  server = await startTestPostgres()
  pool = new pg.Pool({ connectionString: server.url, max: 4, idleTimeoutMillis: 0 }) // no idle timers: a test counts timers
  ignoreConnectionErrors(pool)
  // Defaults that differ from the consumer's session settings: its values must not depend on them.
  await pool.query(`ALTER DATABASE postgres SET TimeZone = 'Asia/Tokyo'`)
  await pool.query(`ALTER DATABASE postgres SET DateStyle = 'SQL, MDY'`)
  await pool.query(`ALTER DATABASE postgres SET IntervalStyle = 'postgres_verbose'`)
  await pool.query(`ALTER DATABASE postgres SET bytea_output = 'escape'`)
  await pool.query(`ALTER DATABASE postgres SET extra_float_digits = 3`)
})

afterAll(async () => {
  await pool?.end()
  await server?.destroy()
})

afterEach(async () => {
  await Promise.all(running.splice(0).map((stream) => stream.stop()))
  await pool.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active`)
})

function names(): { slotName: string; publicationName: string } {
  slotCount += 1
  return { slotName: `test_slot_${slotCount}`, publicationName: `test_pub_${slotCount}` }
}

async function follow(log: TransactionLog, options: Partial<ReplicationOptions> = {}): Promise<ReplicationStream> {
  const stream = await startReplication({
    connectionString: server.url,
    ...names(),
    appliedLsn: null,
    onTransaction: log.onTransaction,
    onSlotLost: log.onSlotLost,
    onKeepalive: log.onKeepalive,
    ...options
  })
  running.push(stream)
  return stream
}

/** The slot's confirmed_flush_lsn: what Postgres took as acknowledged. */
async function confirmedFlush(slotName: string): Promise<bigint> {
  const { rows } = await pool.query<{ lsn: string }>(
    `SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1`,
    [slotName]
  )
  return parseLsn(rows[0]!.lsn)
}

/** A stream with awaitDurable on a new table `name`, once it applied the inserts of `ids` (none reported durable). */
async function appliedNotDurable(name: string, ids: number[]) {
  await pool.query(`CREATE TABLE ${name} (id int PRIMARY KEY)`)
  const log = new TransactionLog()
  const settings = names()
  const stream = await follow(log, { ...settings, awaitDurable: true })
  await stream.ensureTable('public', name)
  await insertOneByOne(name, ids)
  await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(ids.map(String)))
  return { log, settings, stream }
}

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
    await pool.query(`CREATE TYPE mood AS ENUM ('sad', 'happy')`)
    await pool.query(`CREATE TABLE typed (
      id uuid PRIMARY KEY, t text, v varchar(10), s int2, i int4, b int8, n numeric(10, 3), flag bool,
      ts timestamptz, d date, j jsonb, tags text[], m mood, raw bytea, f float8, iv interval, nothing text)`)
    const log = new TransactionLog()
    const stream = await follow(log)
    await stream.ensureTable('public', 'typed')
    await pool.query(`INSERT INTO typed VALUES (
      '9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D', 'hello "world"', 'ünï', -32768, 2147483647, 9223372036854775807, 12.3, true,
      '2024-01-02 03:04:05.123+00', '2024-01-02', '{"b": [true, null], "a": 1}', ARRAY['a', 'b c', NULL], 'happy',
      '\\x0001fffe', 0.1, '1 year 2 months 3 days 4 hours', NULL)`)
    await pool.query(`UPDATE typed SET t = 'changed', flag = false`)
    await pool.query(`DELETE FROM typed`)
    await pool.query(`TRUNCATE typed`)
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
    await pool.query(`CREATE TABLE toasty (id int PRIMARY KEY, big text, n int)`)
    await pool.query(`ALTER TABLE toasty ALTER COLUMN big SET STORAGE EXTERNAL`)
    const log = new TransactionLog()
    const stream = await follow(log)
    await stream.ensureTable('public', 'toasty')
    const big = 'x'.repeat(20_000)
    await pool.query(`INSERT INTO toasty VALUES (1, $1, 1)`, [big])
    await pool.query(`UPDATE toasty SET n = 2`)
    await log.waitFor((txs) => expect(txs).toHaveLength(2))
    expect(rowsOf(log.transactions, 'update')).toEqual([{ id: '1', big, n: '2' }])
  })

  it('hands over a multi-statement transaction once, with its xid and one commit LSN', async () => {
    await pool.query(`CREATE TABLE multi (id int PRIMARY KEY, label text)`)
    const log = new TransactionLog()
    const stream = await follow(log)
    await stream.ensureTable('public', 'multi')
    await pool.query(`INSERT INTO multi VALUES (0, 'before')`)
    const client = await pool.connect()
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
    await pool.query(
      `CREATE TABLE measurements (id int, at date, v text, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)`
    )
    await pool.query(
      `CREATE TABLE measurements_2024 PARTITION OF measurements FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')`
    )
    const { publicationName } = names()
    await pool.query(`CREATE PUBLICATION ${publicationName}`)
    const log = new TransactionLog()
    const stream = await follow(log, { publicationName })
    await stream.ensureTable('public', 'measurements')
    await pool.query(`INSERT INTO measurements VALUES (1, '2024-05-06', 'x')`)
    await pool.query(`UPDATE measurements SET id = 2`)
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
    await pool.query(`CREATE TABLE keyed (id int PRIMARY KEY, label text, big text)`)
    await pool.query(`ALTER TABLE keyed ALTER COLUMN big SET STORAGE EXTERNAL`)
    const log = new TransactionLog()
    const { publicationName } = names()
    await follow(log, { publicationName })
    await pool.query(`ALTER PUBLICATION ${publicationName} ADD TABLE keyed`)
    await pool.query(`INSERT INTO keyed VALUES (1, 'one', $1)`, ['y'.repeat(20_000)])
    await pool.query(`UPDATE keyed SET label = 'uno'`)
    await pool.query(`UPDATE keyed SET id = 2`)
    await pool.query(`DELETE FROM keyed`)
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

describe('ensureTable', () => {
  it('adds the table to the publication with REPLICA IDENTITY FULL, and is idempotent', async () => {
    await pool.query(`CREATE TABLE "Odd ""name""" (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const { publicationName } = names()
    const stream = await follow(log, { publicationName })
    await stream.ensureTable('public', 'Odd "name"')
    await Promise.all([stream.ensureTable('public', 'Odd "name"'), stream.ensureTable('public', 'Odd "name"')])
    const { rows } = await pool.query(
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
    await pool.query(`CREATE TABLE joined_late (id int PRIMARY KEY)`)
    await pool.query(`CREATE TABLE unrelated (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const lines: string[] = []
    const stream = await follow(log, { log: (line) => lines.push(line) })
    const open = await pool.connect()
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

async function insertOneByOne(table: string, ids: Array<number | string>): Promise<void> {
  for (const id of ids) await pool.query(`INSERT INTO ${table} VALUES ($1)`, [id])
}

describe('acknowledgement and recovery', () => {
  it('acknowledges a transaction only once onTransaction resolved; a restarted consumer gets it again', async () => {
    await pool.query(`CREATE TABLE acked (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const settings = names()
    const first = await follow(log, {
      ...settings,
      onTransaction: (tx) =>
        insertedIds([tx]).includes('2') ? new Promise<void>(() => undefined) : log.onTransaction(tx)
    })
    await first.ensureTable('public', 'acked')
    await insertOneByOne('acked', [1, 2, 3])
    const inserted = await first.currentWalLsn()
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1']))
    // the second and third were sent: the third waits behind the second, whose onTransaction never resolves
    await sentThrough(pool, inserted, settings.slotName)
    expect(insertedIds(log.transactions)).toEqual(['1'])
    const applied = first.lastLsn
    expect(await confirmedFlush(settings.slotName)).toBeLessThan(applied + 1000n)
    await first.stop()

    const again = new TransactionLog()
    const second = await follow(again, { ...settings, appliedLsn: applied })
    await insertOneByOne('acked', [4])
    await again.waitFor((txs) => expect(insertedIds(txs)).toEqual(['2', '3', '4']))
    expect(second.lastLsn).toBe(again.transactions.at(-1)?.commitLsn)
  })

  it('with awaitDurable, acknowledges only through what durableThrough reported, also while idle', async () => {
    const { log, settings, stream } = await appliedNotDurable('durable', [1, 2, 3])
    const confirmed = () => confirmedFlush(settings.slotName)
    const [first, second, third] = log.transactions.map((tx) => tx.commitLsn) as [bigint, bigint, bigint]
    // the walsender's keepalives after what it sent: none may confirm what is applied but not durable
    expect(await log.keepaliveAfter(first)).toMatchObject({ answered: false })
    expect(await confirmed()).toBeLessThan(first)
    const before = log.keepalives.length
    stream.durableThrough(second)
    await vi.waitFor(async () => expect(await confirmed()).toBeGreaterThanOrEqual(second), { timeout: 5_000 })
    // answered, the walsender pings again, past the third, while everything is applied: still not confirmable
    expect(await log.keepaliveAfter(third + 1n, before)).toMatchObject({ answered: false })
    expect(await confirmed()).toBeLessThan(third)
    stream.durableThrough(third)
    await vi.waitFor(async () => expect(await confirmed()).toBeGreaterThanOrEqual(third), { timeout: 5_000 })
  })

  it('does not answer the walsender ping for ping while what it sent is not confirmable yet', async () => {
    const { log, settings, stream } = await appliedNotDurable('pinged', [1])
    // applied, not durable: the walsender pings before each wait while our position trails its own; answered every
    // time, each answer wakes it to ping again (thousands of round trips a second, a core between the two processes)
    expect(await log.keepaliveAfter(log.transactions[0]!.commitLsn)).toMatchObject({ answered: false })
    stream.durableThrough(log.transactions[0]!.commitLsn)
    await vi.waitFor(
      async () =>
        expect(await confirmedFlush(settings.slotName)).toBeGreaterThanOrEqual(log.transactions[0]!.commitLsn),
      { timeout: 15_000 }
    )
  })

  it('reports the stream position only through transactions whose onTransaction resolved', async () => {
    await pool.query(`CREATE TABLE positioned (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const positions: bigint[] = []
    let release = (): void => undefined
    const held = new Promise<void>((resolve) => (release = resolve))
    let second: ReplicatedTransaction | null = null
    const stream = await follow(log, {
      onPosition: (lsn) => positions.push(lsn),
      onTransaction: async (tx) => {
        if (insertedIds([tx]).includes('2')) {
          second = tx
          await held
        }
        await log.onTransaction(tx)
      }
    })
    await stream.ensureTable('public', 'positioned')
    await insertOneByOne('positioned', [1, 2, 3])
    await vi.waitFor(() => expect(second).not.toBeNull(), { timeout: 15_000 })
    const blockedAt = (second as ReplicatedTransaction | null)?.commitLsn ?? 0n
    // a keepalive past the blocked transaction: received, not handed over, so not a position to report
    await log.keepaliveAfter(blockedAt + 1n)
    expect(positions.every((lsn) => lsn < blockedAt)).toBe(true)
    release()
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1', '2', '3']))
    const last = log.transactions.at(-1)?.commitLsn ?? 0n
    await vi.waitFor(() => expect(positions.at(-1)).toBeGreaterThan(last), { timeout: 15_000 })
    expect([...positions].sort((a, b) => (a < b ? -1 : 1))).toEqual(positions)
  })

  it('confirms WAL without published changes while idle, so Postgres can recycle it', async () => {
    await pool.query(`CREATE TABLE not_published (id int PRIMARY KEY)`)
    const settings = names()
    const stream = await follow(new TransactionLog(), settings)
    await insertOneByOne('not_published', [1, 2, 3])
    const written = await stream.currentWalLsn()
    await vi.waitFor(async () => expect(await confirmedFlush(settings.slotName)).toBeGreaterThanOrEqual(written), {
      timeout: 15_000
    })
  })

  it('skips what appliedLsn covers when the slot still holds it', async () => {
    await pool.query(`CREATE TABLE resumed (id int PRIMARY KEY)`)
    const settings = names()
    const unread = await follow(new TransactionLog(), settings)
    await unread.ensureTable('public', 'resumed')
    await unread.stop()
    const witness = new TransactionLog()
    await follow(witness, { publicationName: settings.publicationName })
    await insertOneByOne('resumed', [1, 2, 3])
    await witness.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1', '2', '3']))

    const log = new TransactionLog()
    const stream = await follow(log, { ...settings, appliedLsn: witness.transactions[1]!.commitLsn })
    expect(stream.lastLsn).toBe(witness.transactions[1]!.commitLsn)
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['3']))
    await insertOneByOne('resumed', [4])
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['3', '4']))
    expect(log.transactions[0]?.commitLsn).toBe(witness.transactions[2]?.commitLsn)
  })

  it('delivers a transaction whose onTransaction threw again, once it succeeds', async () => {
    await pool.query(`CREATE TABLE retried (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const statuses: string[] = []
    let failures = 0
    const stream = await follow(log, {
      onTransaction: async (tx) => {
        if (insertedIds([tx]).includes('2') && failures++ < 2) throw new Error('disk full')
        await log.onTransaction(tx)
      },
      onStatus: (status) => statuses.push(status.error ? `${status.state}: ${status.error}` : status.state)
    })
    await stream.ensureTable('public', 'retried')
    await insertOneByOne('retried', [1, 2, 3])
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1', '2', '3']))
    expect(failures).toBe(3)
    expect(statuses.filter((status) => status.includes('disk full'))).toHaveLength(2)
    expect(statuses.at(-1)).toBe('streaming')
  })

  it('resumes without loss or duplicates when the walsender is terminated', async () => {
    await pool.query(`CREATE TABLE interrupted (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const settings = names()
    const stream = await follow(log, settings)
    await stream.ensureTable('public', 'interrupted')
    const terminate = async (): Promise<void> => {
      await pool.query(
        'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active',
        [settings.slotName]
      )
    }
    await insertOneByOne('interrupted', idRange(1, 10))
    await terminate()
    await insertOneByOne('interrupted', idRange(11, 20))
    await log.waitFor((txs) => expect(txs.length).toBeGreaterThanOrEqual(15))
    await terminate()
    await insertOneByOne('interrupted', idRange(21, 30))
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(idRange(1, 30)))
    expectCommitOrder(log.transactions)
  })

  it('reports a dropped slot, recreates it and follows from there', async () => {
    await pool.query(`CREATE TABLE slot_gone (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const settings = names()
    const statuses: string[] = []
    const stream = await follow(log, { ...settings, onStatus: (status) => statuses.push(status.state) })
    await stream.ensureTable('public', 'slot_gone')
    await insertOneByOne('slot_gone', [1])
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1']))

    await vi.waitFor(
      async () => {
        await pool.query(
          'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active',
          [settings.slotName]
        )
        await pool.query('SELECT pg_drop_replication_slot($1)', [settings.slotName])
      },
      { timeout: 10_000, interval: 5 }
    )
    await vi.waitFor(() => expect(log.slotLosses).toEqual([`replication slot "${settings.slotName}" does not exist`]), {
      timeout: 10_000
    })
    await vi.waitFor(() => expect(statuses.at(-1)).toBe('streaming'), { timeout: 10_000 })
    expect(stream.lastLsn).toBe(0n)
    await insertOneByOne('slot_gone', [2])
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1', '2']))
  })

  it('stop() ends connections and timers, also while a transaction is applied or a reconnect is pending', async () => {
    await pool.query(`CREATE TABLE stopping (id int PRIMARY KEY)`)
    const timers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length
    const timersBefore = timers()
    const applying = new TransactionLog()
    const hanging = await startReplication({
      connectionString: server.url,
      ...names(),
      appliedLsn: null,
      onTransaction: (tx) => applying.onTransaction(tx).then(() => new Promise<void>(() => undefined)),
      onSlotLost: applying.onSlotLost
    })
    await hanging.ensureTable('public', 'stopping')
    await insertOneByOne('stopping', [1])
    await applying.waitFor((txs) => expect(txs).toHaveLength(1))
    await hanging.stop()

    const statuses: string[] = []
    const settings = names()
    const reconnecting = await startReplication({
      connectionString: server.url,
      ...settings,
      appliedLsn: null,
      onTransaction: async () => undefined,
      onSlotLost: async () => undefined,
      onStatus: (status) => statuses.push(status.state)
    })
    await pool.query(
      'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active',
      [settings.slotName]
    )
    await vi.waitFor(() => expect(statuses).toContain('reconnecting'), { timeout: 15_000 })
    await reconnecting.stop()

    await vi.waitFor(
      async () => {
        const { rows } = await pool.query(
          `SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'syncscope-replication%'`
        )
        expect(rows).toEqual([])
      },
      { timeout: 15_000 }
    )
    expect(timers()).toBeLessThanOrEqual(timersBefore)
  })

  it('reports a slot lost while it was stopped when it starts with an applied LSN', async () => {
    const log = new TransactionLog()
    await follow(log, { appliedLsn: 123n })
    expect(log.slotLosses).toHaveLength(1)
  })
})

describe('setup errors', () => {
  it('names the privilege a role lacks and how to grant it', async () => {
    await pool.query(`CREATE TABLE owned_by_postgres (id int PRIMARY KEY)`)
    await pool.query(`CREATE ROLE plain LOGIN PASSWORD 'plain'`)
    const url = new URL(server.url)
    url.username = 'plain'
    url.password = 'plain'
    const log = new TransactionLog()
    const start = (): Promise<ReplicationStream> => follow(log, { connectionString: url.toString() })

    await expect(start()).rejects.toThrow(/role "plain" may not create the publication .*GRANT CREATE ON DATABASE/)
    await pool.query('GRANT CREATE ON DATABASE postgres TO plain')
    await expect(start()).rejects.toThrow(
      'role "plain" lacks the REPLICATION attribute that logical replication needs: run ALTER ROLE "plain" WITH REPLICATION'
    )
    await pool.query('ALTER ROLE plain WITH REPLICATION')
    const stream = await start()
    await expect(stream.ensureTable('public', 'owned_by_postgres')).rejects.toThrow(
      /cannot add "public"."owned_by_postgres" to the publication "test_pub_\d+": must be owner of table owned_by_postgres; the role must own both/
    )
  })

  it('rejects a slot name Postgres would not accept', async () => {
    await expect(follow(new TransactionLog(), { slotName: 'Bad-Name' })).rejects.toThrow('slot name "Bad-Name" must be')
  })
})
