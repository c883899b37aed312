import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type {
  RowsAt,
  ShapeDiff,
  ShapeLogInfo,
  TxidReport,
  VerifyReport,
  BundleSummary
} from '../../src/shared/contract/timetravel'
import { toRecording } from '../../src/shared/doctor-recording'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { FollowingClient } from './support'

const key = (id: number) => `"public"."contracted"/"${id}"`

/** The calls the workbench's scrubber, Verify button, txid panel and bundle opening use, through the app's dispatcher. */
describe('timetravel.* in the contract', () => {
  let server: TestShapeServer
  let client: FollowingClient
  let txid: string

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000 })
    await server.pool.query('CREATE TABLE contracted (id int PRIMARY KEY, title text NOT NULL)')
    await server.pool.query(`INSERT INTO contracted VALUES (1, 'one'), (2, 'two')`)
    client = new FollowingClient(`${server.url}/v1/shape`, { table: 'contracted' })
    await client.start()
    const { rows } = await server.pool.query<{ txid: string }>(
      `WITH changed AS (UPDATE contracted SET title = 'one, edited' WHERE id = 1 RETURNING 1) SELECT pg_current_xact_id()::text AS txid FROM changed`
    )
    txid = rows[0]?.txid as string
    await client.until((current) => current.get(key(1))?.title === 'one, edited', 'the update')
    client.stop()
  })
  afterAll(async () => server?.close())

  async function call<T>(name: string, input: unknown): Promise<T> {
    const result = await server.app.dispatch(name, input)
    if (!result.ok) throw new Error(`${name}: ${JSON.stringify(result.body)}`)
    return result.value as T
  }

  it('opens the local shape by its handle; the rows at any point, a diff, the messages; a bundle of it opened again', async () => {
    const handle = client.shape.stream.current.handle as string
    const log = await call<ShapeLogInfo>('timetravel.open', { source: { kind: 'local', handle } })
    expect(log).toMatchObject({ source: { kind: 'local-files' }, handle, complete: true, total: 4 })
    const atSnapshot = await call<RowsAt>('timetravel.rowsAt', { logId: log.logId, at: { count: 3 } })
    expect(atSnapshot.rows.map((row) => row.value.title)).toEqual(['one', 'two'])
    const atEnd = await call<RowsAt>('timetravel.rowsAt', { logId: log.logId, at: { offset: log.end } })
    expect(atEnd.rows[0]?.origins.map((origin) => origin.operation)).toEqual(['insert', 'update'])
    const diff = await call<ShapeDiff>('timetravel.diff', {
      logId: log.logId,
      from: { offset: '0_0' },
      to: { offset: log.end }
    })
    expect(diff.changes.map((change) => [change.key, change.columns])).toEqual([[key(1), ['title']]])
    const { entries } = await call<{ entries: Array<{ message: { headers: { txids?: number[] } } }> }>(
      'timetravel.messages',
      { logId: log.logId, from: 2, count: 10 }
    )
    expect(entries.map((entry) => entry.message.headers.txids ?? [])).toEqual([[], [Number(txid)]])

    const bundle = await call<{ name: string; text: string }>('timetravel.exportBundle', {
      logId: log.logId,
      recording: { name: 'session.json', text: JSON.stringify(toRecording([client.shape.stream.recorder])) }
    })
    expect(bundle.name).toMatch(/^contracted-.*\.syncscope-bundle\.json$/)
    const reopened = await call<ShapeLogInfo & { bundle: BundleSummary }>('timetravel.openBundle', bundle)
    expect(reopened).toMatchObject({ source: { kind: 'bundle' }, total: 4, bundle: { postgres: { rows: 2 } } })
    const verified = await call<VerifyReport>('timetravel.verify', { bundleLogId: reopened.logId })
    expect(verified).toMatchObject({ verdict: 'equal', postgres: { kind: 'bundle' } })
  })

  it("verifies a workbench session against the app's database, and traces a txid through opened and local shapes", async () => {
    const session = { name: 'session.json', text: JSON.stringify(toRecording([client.shape.stream.recorder])) }
    const verified = await call<VerifyReport>('timetravel.verify', { recording: session })
    expect(verified).toMatchObject({ verdict: 'equal', postgres: { kind: 'database' } })
    expect(verified.shapes[0]?.log.kind).toBe('local-files')
    const handle = client.shape.stream.current.handle as string
    const report = await call<TxidReport>('timetravel.txid', { txid, shapes: [{ kind: 'local', handle }] })
    expect(report).toMatchObject({ verdict: 'delivered', postgres: { status: 'committed' } })
    expect(report.shapes[0]?.carriers.map((entry) => entry.key)).toEqual([key(1)])
    const everywhere = await call<TxidReport>('timetravel.txid', { txid, allLocal: true })
    expect(everywhere.shapes.map((shape) => [shape.handle, shape.verdict])).toEqual([[handle, 'carried']])
    const nothing = await server.app.dispatch('timetravel.txid', { txid })
    expect(nothing).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringMatching(/name the shapes/) } }
    })
  })

  it('the scrubber: windows of the rows at points asked forwards and back, the same as replayed afresh', async () => {
    const handle = client.shape.stream.current.handle as string
    const log = await call<ShapeLogInfo>('timetravel.open', { source: { kind: 'local', handle } })
    const at = (count: number, start: number, limit: number) =>
      call<RowsAt>('timetravel.rowsAt', { logId: log.logId, at: { count }, start, limit })
    const second = await at(4, 1, 10)
    expect(second).toMatchObject({ count: 4, rowCount: 2, start: 1 })
    expect(second.rows.map((row) => [row.key, row.value.title])).toEqual([[key(2), 'two']])
    // back before the update, then forwards again: the kept replay starts over, then moves on
    expect((await at(3, 0, 1)).rows.map((row) => row.value.title)).toEqual(['one'])
    expect((await at(0, 0, 10)).rowCount).toBe(0)
    expect((await at(4, 0, 1)).rows.map((row) => [row.value.title, row.origins.length])).toEqual([['one, edited', 2]])
    expect(await at(4, 0, 10)).toEqual(await call<RowsAt>('timetravel.rowsAt', { logId: log.logId, at: { count: 4 } }))
  })

  it("opens what a session received (its recording) as a log: a remote service's shape, whose files are elsewhere", async () => {
    const session = { name: 'session.json', text: JSON.stringify(toRecording([client.shape.stream.recorder])) }
    const log = await call<ShapeLogInfo>('timetravel.open', { source: { kind: 'recording', recording: session } })
    expect(log).toMatchObject({
      source: { kind: 'recording', description: 'what the client of session.json received' },
      handle: client.shape.stream.current.handle,
      complete: false,
      definition: { table: 'contracted' }
    })
    expect(log.entries.map((entry) => [entry.kind, entry.operation ?? entry.name])).toEqual([
      ['change', 'insert'],
      ['change', 'insert'],
      ['control', 'snapshot-end'],
      ['change', 'update']
    ])
    const atEnd = await call<RowsAt>('timetravel.rowsAt', { logId: log.logId, at: { count: log.total } })
    expect(atEnd.rows.map((row) => row.value.title)).toEqual(['one, edited', 'two'])
    const notShapes = await server.app.dispatch('timetravel.open', {
      source: { kind: 'recording', recording: { name: 'empty.har', text: '{"log":{"entries":[]}}' } }
    })
    expect(notShapes).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringMatching(/^empty\.har holds no shape requests/) } }
    })
  })

  it('input it cannot use is a 400 naming it: an offset outside the log, a closed log, an unknown handle', async () => {
    const handle = client.shape.stream.current.handle as string
    const log = await call<ShapeLogInfo>('timetravel.open', { source: { kind: 'local', handle } })
    const outside = await server.app.dispatch('timetravel.rowsAt', {
      logId: log.logId,
      at: { offset: '99999999999_0' }
    })
    expect(outside).toMatchObject({
      ok: false,
      status: 400,
      body: {
        error: { code: 'timetravel_input', message: `offset 99999999999_0 is outside the log: it ends at ${log.end}` }
      }
    })
    await call('timetravel.close', { logId: log.logId })
    const closed = await server.app.dispatch('timetravel.diff', {
      logId: log.logId,
      from: { count: 0 },
      to: { count: 1 }
    })
    expect(closed).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/no open log/) } } })
    const unknown = await server.app.dispatch('timetravel.open', { source: { kind: 'local', handle: '1-2' } })
    expect(unknown).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringMatching(/has no shape 1-2/) } }
    })
  })
})
