import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Message, get } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { TagClient, idsOf } from '../support/subquery-client'
import { sentThrough } from '../support/replication'

/**
 * A move-in's query may see transactions the replication stream has not delivered yet. These tests hold the query
 * (an ACCESS EXCLUSIVE lock on the shape's table, which its ACCESS SHARE lock waits for before the snapshot is taken)
 * so that such transactions commit inside its snapshot, every time.
 */
describe('subquery shapes: a move-in spliced between the transactions its snapshot saw and the others', () => {
  let server: TestShapeServer
  let count = 0

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 500 })
  })
  afterAll(async () => server?.close())

  async function tables(): Promise<{
    projects: string
    tasks: string
    shape: Record<string, string>
    expected: () => Promise<string[]>
  }> {
    count += 1
    const projects = `sp_projects_${count}`
    const tasks = `sp_tasks_${count}`
    await server.pool.query(`CREATE TABLE ${projects} (id int PRIMARY KEY, archived boolean NOT NULL, name text)`)
    await server.pool.query(`CREATE TABLE ${tasks} (id int PRIMARY KEY, project_id int, owner_id int, note text)`)
    await server.pool.query(`INSERT INTO ${projects} VALUES (1, false, 'a'), (2, true, 'b'), (3, true, 'c')`)
    await server.pool.query(
      `INSERT INTO ${tasks} VALUES (10, 1, 9, 'x'), (30, 3, 9, 'y'), (50, 2, 1, 'held by its owner')`
    )
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived) OR owner_id = $1`
    const expected = () =>
      idsOf(
        server.pool,
        `SELECT id FROM ${tasks} WHERE project_id IN (SELECT id FROM ${projects} WHERE NOT archived) OR owner_id = 1`
      )
    return { projects, tasks, shape: { table: tasks, where, 'params[1]': '1' }, expected }
  }

  /**
   * Un-archives project 3 while the shape's table is locked in a transaction of its own, waits until the server's
   * move-in query waits for that lock, runs `during` (its writes commit inside the move-in's snapshot), then commits.
   */
  async function moveInHeld(
    projects: string,
    tasks: string,
    during: (locker: pg.PoolClient) => Promise<void>
  ): Promise<void> {
    const locker = await server.pool.connect()
    try {
      await locker.query('BEGIN')
      await locker.query(`LOCK TABLE ${tasks} IN ACCESS EXCLUSIVE MODE`)
      await server.pool.query(`UPDATE ${projects} SET archived = false WHERE id = 3`)
      const waiting = async () =>
        (
          await server.pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = $1 AND NOT l.granted`,
            [tasks]
          )
        ).rows[0]?.n
      await expect.poll(waiting, { timeout: 10_000 }).toBe('1')
      await during(locker)
      await locker.query('COMMIT')
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined)
      locker.release()
    }
  }

  const lsnOf = (text: string): bigint => {
    const [high = '0', low = '0'] = text.split('/')
    return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
  }
  const currentLsn = async (): Promise<bigint> =>
    lsnOf((await server.pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]?.lsn ?? '0/0')

  it('a transaction inside the move-in snapshot that moves a held row into the moved-in value comes before the move-in block: the row is never inserted twice', async () => {
    const { projects, tasks, shape, expected } = await tables()
    const client = new TagClient(server.url, shape)
    await client.sync()
    expect(client.ids()).toEqual(['10', '50'])
    // task 50 leaves the owner's disjunct and enters project 3: its new state is in the move-in query's snapshot
    await moveInHeld(projects, tasks, (locker) =>
      locker
        .query(`UPDATE ${tasks} SET project_id = 3, owner_id = 7, note = 'moved' WHERE id = 50`)
        .then(() => undefined)
    )
    await client.until(expected)
    expect(client.anomalies).toEqual([])
    expect(client.ids()).toEqual(['10', '30', '50'])
    expect(client.rows.get(`"public"."${tasks}"/"50"`)?.value.note).toBe('moved')
    const order = client.seen.map(
      (message) =>
        message.headers.event ??
        (message.headers.is_move_in
          ? `move-in row ${message.value?.id}`
          : `${message.headers.operation ?? message.headers.control} ${message.value?.id ?? ''}`.trim())
    )
    const start = order.indexOf('delete 50')
    expect(order.slice(start, start + 5)).toEqual([
      'delete 50',
      'move-in',
      'move-in row 30',
      'move-in row 50',
      'snapshot-end'
    ])
  })

  it('a transaction inside the move-in snapshot that moves another value in is followed by its own move-in; changes between are judged without that value', async () => {
    const { projects, tasks, shape, expected } = await tables()
    await server.pool.query(`INSERT INTO ${tasks} VALUES (20, 2, 9, 'in project 2')`)
    const client = new TagClient(server.url, shape)
    await client.sync()
    expect(client.ids()).toEqual(['10', '50'])
    await moveInHeld(projects, tasks, async (locker) => {
      await server.pool.query(`UPDATE ${projects} SET archived = false WHERE id = 2`)
      await locker.query(`UPDATE ${tasks} SET note = 'changed' WHERE id = 20`)
    })
    await client.until(expected)
    expect(client.anomalies).toEqual([])
    expect(client.ids()).toEqual(['10', '20', '30', '50'])
    expect(client.rows.get(`"public"."${tasks}"/"20"`)?.value.note).toBe('changed')
    const order = client.seen.flatMap((message) =>
      message.headers.event ? [message.headers.event] : message.headers.is_move_in ? [`row ${message.value?.id}`] : []
    )
    expect(order).toEqual(['move-in', 'row 30', 'move-in', 'row 20'])
  })

  it('while a move-in is pending, readers are told no position past it and the slot is not acknowledged past it; a reader resuming from that position gets the move-in', async () => {
    const { projects, tasks, shape, expected } = await tables()
    const client = new TagClient(server.url, shape)
    await client.sync()
    let seen: string | undefined
    const before = await currentLsn()
    await moveInHeld(projects, tasks, async () => {
      // past the move's commit record, short of the transactions after it
      const moved = await currentLsn()
      // a later transaction the shape holds too, and one no shape reads
      await server.pool.query(`UPDATE ${projects} SET name = 'renamed' WHERE id = 1`)
      await server.pool.query('CREATE TABLE IF NOT EXISTS sp_unrelated (id int)')
      await server.pool.query('INSERT INTO sp_unrelated VALUES (1)')
      const answer = await client.sync()
      seen = String(
        answer.find((message: Message) => message.headers.control === 'up-to-date')?.headers.global_last_seen_lsn
      )
      expect(BigInt(seen)).toBeLessThan(moved)
      const now = await get(server.url, { ...shape, offset: 'now' })
      const nowLsn = (now.body as Message[]).find((message) => message.headers.control === 'up-to-date')?.headers
        .global_last_seen_lsn
      expect(BigInt(String(nowLsn))).toBeLessThan(moved)
      // the consumer got the transactions after the move: none of them may be acknowledged while it is held
      await sentThrough(server.pool, await currentLsn())
      const slot = await server.pool.query<{ lsn: string }>(
        `SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_type = 'logical'`
      )
      for (const { lsn } of slot.rows) expect(lsnOf(lsn)).toBeLessThanOrEqual(before)
    })
    const resumer = new TagClient(server.url, shape)
    resumer.handle = client.handle
    resumer.offset = `${String(seen)}_0`
    for (
      let attempt = 0;
      attempt < 20 && !resumer.seen.some((message) => message.headers.event === 'move-in');
      attempt++
    )
      await resumer.sync()
    expect(resumer.seen.filter((message) => message.headers.event === 'move-in')).toHaveLength(1)
    await client.until(expected)
    expect(client.anomalies).toEqual([])
    expect(client.ids()).toEqual(await expected())
  })

  it('more than 1000 transactions held during one move-in invalidate the shape: its readers get 409 and refetch rows equal to Postgres', async () => {
    const { projects, tasks, shape, expected } = await tables()
    const client = new TagClient(server.url, shape, true)
    await client.sync()
    const handle = client.handle
    await moveInHeld(projects, tasks, async () => {
      const writer = await server.pool.connect()
      try {
        for (let n = 0; n < 1001; n++) await writer.query(`UPDATE ${projects} SET name = $1 WHERE id = 1`, [`n${n}`])
      } finally {
        writer.release()
      }
      await expect
        .poll(async () => (await get(server.url, { ...shape, handle, offset: client.offset })).status, {
          timeout: 20_000
        })
        .toBe(409)
    })
    await client.until(expected)
    expect(client.handle).not.toBe(handle)
    expect(client.ids()).toEqual(await expected())
  })
})
