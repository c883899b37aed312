import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { txidMain } from '../../src/main/cli/txid'
import type { TxidReport } from '../../src/shared/contract/timetravel'
import { describeWith } from '../support/facility-tests'
import { SOUND, startNginx, type RunningNginx } from '../support/nginx'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { FollowingClient, expectOneLine, jsonOf, runMain } from './support'

const key = (table: string, id: number) => `"public"."${table}"/"${id}"`

describe('syncscope txid: where a write went', () => {
  let server: TestShapeServer
  let tables = 0

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000 })
  })
  afterAll(async () => server?.close())

  async function table(): Promise<string> {
    const name = `tx_items_${++tables}`
    await server.pool.query(`CREATE TABLE ${name} (id int PRIMARY KEY, title text, public boolean NOT NULL)`)
    await server.pool.query(`INSERT INTO ${name} VALUES (1, 'seed', true)`)
    return name
  }

  /** Runs `sql` in one transaction, taking its id there as an app does for awaitTxId; returns the id. */
  async function write(sql: string, end: 'COMMIT' | 'ROLLBACK' = 'COMMIT'): Promise<string> {
    const client = await server.pool.connect()
    try {
      await client.query('BEGIN')
      await client.query(sql)
      const { rows } = await client.query<{ txid: string }>('SELECT pg_current_xact_id()::text AS txid')
      await client.query(end)
      return rows[0]?.txid as string
    } finally {
      client.release()
    }
  }

  const where = 'public = true'
  const shapeUrl = (base: string, name: string, extra = '') =>
    `${base}/v1/shape?table=${name}&where=${encodeURIComponent(where)}${extra}`

  async function follow(name: string, done: (rows: ReadonlyMap<string, unknown>) => boolean): Promise<void> {
    const client = new FollowingClient(`${server.url}/v1/shape`, { table: name, where })
    await client.start()
    await client.until(done, 'the change')
    client.stop()
  }

  const trace = (txid: string, url: string, ...flags: string[]) =>
    runMain(txidMain, [
      txid,
      '--shape',
      url,
      '--database',
      server.databaseUrl,
      '--data-dir',
      server.dataDir,
      '--json',
      ...flags
    ])

  it('a write in its own transaction: the message carrying the id, from the files and over HTTP', async () => {
    const name = await table()
    await follow(name, () => true)
    const txid = await write(`INSERT INTO ${name} VALUES (2, 'carried', true)`)
    await follow(name, (rows) => rows.has(key(name, 2)))
    for (const flags of [[], ['--over-http']]) {
      const report = jsonOf<TxidReport>(await trace(txid, shapeUrl(server.url, name), ...flags))
      expect(report).toMatchObject({ verdict: 'delivered', xid: Number(txid), postgres: { status: 'committed' } })
      expect(report.shapes[0]).toMatchObject({ verdict: 'carried', reason: null })
      expect(report.shapes[0]?.carriers.map((entry) => [entry.operation, entry.key, entry.txids])).toEqual([
        ['insert', key(name, 2), [Number(txid)]]
      ])
    }
    // every shape of the server's data folder: which of them carry it
    const everywhere = jsonOf<TxidReport>(
      await runMain(txidMain, [
        txid,
        '--all-local',
        '--database',
        server.databaseUrl,
        '--data-dir',
        server.dataDir,
        '--json'
      ])
    )
    expect(everywhere.shapes.length).toBeGreaterThanOrEqual(1)
    expect(
      everywhere.shapes.filter((shape) => shape.verdict === 'carried').map((shape) => shape.definition.table)
    ).toEqual([name])
    const text = await runMain(txidMain, [
      txid,
      '--shape',
      shapeUrl(server.url, name),
      '--database',
      server.databaseUrl,
      '--data-dir',
      server.dataDir
    ])
    expect(text.code).toBe(0)
    expect(text.out).toMatch(
      new RegExp(
        `carried\\n    1 message\\(s\\) carry it in txids: the insert of ${key(name, 2).replace(/[."/]/g, '\\$&')} at \\d+_0 \\(txid ${txid}\\)`
      )
    )
  })

  it('a write before the shape began: the snapshot that already covers it', async () => {
    const name = await table()
    const txid = await write(`INSERT INTO ${name} VALUES (2, 'before', true)`)
    await follow(name, (rows) => rows.has(key(name, 2)))
    const report = jsonOf<TxidReport>(await trace(txid, shapeUrl(server.url, name)))
    expect(report.shapes[0]).toMatchObject({
      verdict: 'covered',
      cover: { initial: true, entry: { name: 'snapshot-end' } }
    })
    expect(report.shapes[0]?.explanation[0]).toMatch(
      /the shape's snapshot ending at 0_0 \(xmin \d+, xmax \d+, xip_list \[.*\]\) already sees it committed/
    )
  })

  it('absent, and why: the where, the id taken outside the write, a changes_only shape begun later, a rollback', async () => {
    const name = await table()
    await follow(name, () => true)
    const url = shapeUrl(server.url, name)

    const hidden = await write(`INSERT INTO ${name} VALUES (3, 'not public', false)`)
    const outside = (await server.pool.query<{ txid: string }>('SELECT pg_current_xact_id()::text AS txid')).rows[0]
      ?.txid as string
    await server.pool.query(`INSERT INTO ${name} VALUES (4, 'written elsewhere', true)`)
    const rolledBack = await write(`INSERT INTO ${name} VALUES (5, 'rolled back', true)`, 'ROLLBACK')
    await follow(name, (rows) => rows.has(key(name, 4)))

    const where = jsonOf<TxidReport>(await trace(hidden, url), 1)
    expect(where.shapes[0]).toMatchObject({ verdict: 'absent', reason: 'where' })
    expect(where.shapes[0]?.explanation[0]).toContain(
      `the write did not match the where: transaction ${hidden} wrote ${key(name, 3)}`
    )

    const taken = jsonOf<TxidReport>(await trace(outside, url), 1)
    expect(taken).toMatchObject({ verdict: 'absent', postgres: { status: 'committed' } })
    expect(taken.shapes[0]?.reason).toBe('outside-transaction')
    expect(taken.shapes[0]?.explanation[0]).toMatch(
      new RegExp(
        `the id was probably taken outside the write's transaction: transaction ${outside} committed without leaving any row in ${name}, while transaction ${Number(outside) + 1}, a moment later, did: the insert of .*"4" at \\d+_0`
      )
    )

    const aborted = jsonOf<TxidReport>(await trace(rolledBack, url), 1)
    expect(aborted.shapes[0]).toMatchObject({
      reason: 'aborted',
      explanation: [expect.stringContaining('rolled back')]
    })

    const changesOnly = jsonOf<TxidReport>(await trace(hidden, `${url}&log=changes_only`), 1)
    expect(changesOnly.shapes[0]).toMatchObject({ verdict: 'absent', reason: 'changes-only-started-after' })

    // without the database only the logs are read: absent, and no cause claimed
    const blind = jsonOf<TxidReport>(
      await runMain(txidMain, [hidden, '--shape', url, '--data-dir', server.dataDir, '--json']),
      1
    )
    expect(blind.shapes[0]).toMatchObject({
      verdict: 'absent',
      reason: 'unknown',
      explanation: [expect.stringContaining('--database')]
    })
  })

  it('an id the database never gave, a txid that is no number, no shape: one line and exit code 2', async () => {
    const name = await table()
    const url = shapeUrl(server.url, name)
    const next = (
      await server.pool.query<{ next: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next')
    ).rows[0]?.next as string
    expectOneLine(
      await trace(String(BigInt(next) + 1000n), url),
      /transaction \d+ was never started in this database: the next id it gives is \d+/
    )
    expectOneLine(await trace('abc', url), /"abc" is not a transaction id/)
    const usage = await runMain(txidMain, ['812'])
    expect(usage.code).toBe(2)
    expect(usage.err).toMatch(/^syncscope txid: name at least one --shape, or --all-local\n\nusage:/)
  })

  describeWith(['nginx'], 'behind nginx', () => {
    let nginx: RunningNginx
    beforeAll(async () => {
      nginx = await startNginx(server.url, SOUND)
    })
    afterAll(async () => nginx?.close())

    it('over HTTP through nginx: the carrying message, and an id taken outside the write named as such', async () => {
      const name = await table()
      await follow(name, () => true)
      const carried = await write(`UPDATE ${name} SET title = 'through nginx' WHERE id = 1`)
      const outside = (await server.pool.query<{ txid: string }>('SELECT pg_current_xact_id()::text AS txid')).rows[0]
        ?.txid as string
      await server.pool.query(`UPDATE ${name} SET title = 'after the id' WHERE id = 1`)
      await follow(name, (rows) => (rows.get(key(name, 1)) as { title?: string } | undefined)?.title === 'after the id')
      const url = shapeUrl(nginx.url, name)
      const found = jsonOf<TxidReport>(await trace(carried, url, '--over-http'))
      expect(found.shapes[0]?.source).toMatchObject({ kind: 'http', description: expect.stringContaining(nginx.url) })
      expect(found.shapes[0]?.carriers.map((entry) => entry.operation)).toEqual(['update'])
      const missing = jsonOf<TxidReport>(await trace(outside, url, '--over-http'), 1)
      expect(missing.shapes[0]?.reason).toBe('outside-transaction')
      expect(missing.shapes[0]?.explanation[0]).toContain(
        `while transaction ${Number(outside) + 1}, a moment later, did: the update of ${key(name, 1)}`
      )
    })
  })
})
