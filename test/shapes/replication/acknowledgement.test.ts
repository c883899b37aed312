import { describe, expect, it, vi } from 'vitest'
import { type ReplicatedTransaction, startReplication } from '../../../src/main/shapes/replication'
import { expectCommitOrder, idRange, insertedIds, sentThrough, TransactionLog } from '../../support/replication'
import { useReplicationPostgres } from '../../support/replication-postgres'

const db = useReplicationPostgres()
const { follow, names, confirmedFlush, appliedNotDurable, insertOneByOne } = db

describe('acknowledgement and recovery', () => {
  it('acknowledges a transaction only once onTransaction resolved; a restarted consumer gets it again', async () => {
    await db.pool.query(`CREATE TABLE acked (id int PRIMARY KEY)`)
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
    await sentThrough(db.pool, inserted, settings.slotName)
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
    await db.pool.query(`CREATE TABLE positioned (id int PRIMARY KEY)`)
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
    await db.pool.query(`CREATE TABLE not_published (id int PRIMARY KEY)`)
    const settings = names()
    const stream = await follow(new TransactionLog(), settings)
    await insertOneByOne('not_published', [1, 2, 3])
    const written = await stream.currentWalLsn()
    await vi.waitFor(async () => expect(await confirmedFlush(settings.slotName)).toBeGreaterThanOrEqual(written), {
      timeout: 15_000
    })
  })

  it('skips what appliedLsn covers when the slot still holds it', async () => {
    await db.pool.query(`CREATE TABLE resumed (id int PRIMARY KEY)`)
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
    await db.pool.query(`CREATE TABLE retried (id int PRIMARY KEY)`)
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
    await db.pool.query(`CREATE TABLE interrupted (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const settings = names()
    const stream = await follow(log, settings)
    await stream.ensureTable('public', 'interrupted')
    const terminate = async (): Promise<void> => {
      await db.pool.query(
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
    await db.pool.query(`CREATE TABLE slot_gone (id int PRIMARY KEY)`)
    const log = new TransactionLog()
    const settings = names()
    const statuses: string[] = []
    const stream = await follow(log, { ...settings, onStatus: (status) => statuses.push(status.state) })
    await stream.ensureTable('public', 'slot_gone')
    await insertOneByOne('slot_gone', [1])
    await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(['1']))

    await vi.waitFor(
      async () => {
        await db.pool.query(
          'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active',
          [settings.slotName]
        )
        await db.pool.query('SELECT pg_drop_replication_slot($1)', [settings.slotName])
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
    await db.pool.query(`CREATE TABLE stopping (id int PRIMARY KEY)`)
    const timers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length
    const timersBefore = timers()
    const applying = new TransactionLog()
    const hanging = await startReplication({
      connectionString: db.server.url,
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
      connectionString: db.server.url,
      ...settings,
      appliedLsn: null,
      onTransaction: async () => undefined,
      onSlotLost: async () => undefined,
      onStatus: (status) => statuses.push(status.state)
    })
    await db.pool.query(
      'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active',
      [settings.slotName]
    )
    await vi.waitFor(() => expect(statuses).toContain('reconnecting'), { timeout: 15_000 })
    await reconnecting.stop()

    await vi.waitFor(
      async () => {
        const { rows } = await db.pool.query(
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
