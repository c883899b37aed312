import pg from 'pg'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import {
  parseLsn,
  type ReplicationOptions,
  type ReplicationStream,
  startReplication
} from '../../src/main/shapes/replication'
import { ignoreConnectionErrors, startTestPostgres, type TestPostgres } from './postgres'
import { insertedIds, TransactionLog } from './replication'

/** A test Postgres of its own for a file of replication tests, and the streams its tests start (stopped after each). */
export interface ReplicationPostgres {
  readonly server: TestPostgres
  readonly pool: pg.Pool
  /** A slot and publication name no other test of the file uses. */
  names(): { slotName: string; publicationName: string }
  /** A replication stream into `log` on a new slot and publication (stopped after the test). */
  follow(log: TransactionLog, options?: Partial<ReplicationOptions>): Promise<ReplicationStream>
  /** The slot's confirmed_flush_lsn: what Postgres took as acknowledged. */
  confirmedFlush(slotName: string): Promise<bigint>
  /** One transaction per id into the one-column table `table`. */
  insertOneByOne(table: string, ids: Array<number | string>): Promise<void>
  /** A stream with awaitDurable on a new table `name`, once it applied the inserts of `ids` (none reported durable). */
  appliedNotDurable(
    name: string,
    ids: number[]
  ): Promise<{
    log: TransactionLog
    settings: { slotName: string; publicationName: string }
    stream: ReplicationStream
  }>
}

/**
 * Starts a test Postgres for the file (before all its tests) whose database defaults differ from the consumer's session
 * settings, so that no decoded value may depend on them; after each test, its streams are stopped and its slots dropped.
 */
export function useReplicationPostgres(): ReplicationPostgres {
  let server: TestPostgres | undefined
  let pool: pg.Pool | undefined
  const running: ReplicationStream[] = []
  let slotCount = 0
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the replication Postgres is started in beforeAll')
    return value
  }

  beforeAll(async () => {
    server = await startTestPostgres()
    pool = new pg.Pool({ connectionString: server.url, max: 4, idleTimeoutMillis: 0 }) // no idle timers: a test counts timers
    ignoreConnectionErrors(pool)
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
    await pool?.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active`)
  })

  const fixture: ReplicationPostgres = {
    get server() {
      return ready(server)
    },
    get pool() {
      return ready(pool)
    },
    names() {
      slotCount += 1
      return { slotName: `test_slot_${slotCount}`, publicationName: `test_pub_${slotCount}` }
    },
    async follow(log, options = {}) {
      const stream = await startReplication({
        connectionString: fixture.server.url,
        ...fixture.names(),
        appliedLsn: null,
        onTransaction: log.onTransaction,
        onSlotLost: log.onSlotLost,
        onKeepalive: log.onKeepalive,
        ...options
      })
      running.push(stream)
      return stream
    },
    async confirmedFlush(slotName) {
      const { rows } = await fixture.pool.query<{ lsn: string }>(
        `SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1`,
        [slotName]
      )
      return parseLsn(rows[0]!.lsn)
    },
    async insertOneByOne(table, ids) {
      for (const id of ids) await fixture.pool.query(`INSERT INTO ${table} VALUES ($1)`, [id])
    },
    async appliedNotDurable(name, ids) {
      await fixture.pool.query(`CREATE TABLE ${name} (id int PRIMARY KEY)`)
      const log = new TransactionLog()
      const settings = fixture.names()
      const stream = await fixture.follow(log, { ...settings, awaitDurable: true })
      await stream.ensureTable('public', name)
      await fixture.insertOneByOne(name, ids)
      await log.waitFor((txs) => expect(insertedIds(txs)).toEqual(ids.map(String)))
      return { log, settings, stream }
    }
  }
  return fixture
}
