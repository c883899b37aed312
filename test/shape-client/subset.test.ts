import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  fetchSubset,
  ShapeRecorder,
  SnapshotTracker,
  type ChangeMessage,
  type SubsetMethod
} from '../../src/shared/shape-client'
import { widenXid } from '../../src/shared/xid-snapshot'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { syncToEnd } from '../support/shape-http'

const change = (key: string, xid: number, lsn = '100'): ChangeMessage => ({
  key,
  value: {},
  headers: { operation: 'update', txids: [xid], lsn, op_position: 0 }
})

describe('SnapshotTracker', () => {
  const metadata = { xmin: '100', xmax: '110', xip_list: ['104', '107'], database_lsn: '5000', snapshot_mark: 1 }

  it('skips changes to snapshot keys whose transaction the snapshot saw committed', () => {
    const tracker = new SnapshotTracker()
    tracker.add(metadata, ['k1', 'k2'])
    expect(tracker.contains(change('k1', 99))).toBe(true)
    expect(tracker.contains(change('k1', 105))).toBe(true)
    expect(tracker.contains(change('k1', 104))).toBe(false)
    expect(tracker.contains(change('k1', 110))).toBe(false)
    expect(tracker.contains(change('k3', 99))).toBe(false)
  })

  it('forgets a snapshot once the stream passes its xmax or its database LSN', () => {
    const tracker = new SnapshotTracker()
    tracker.add(metadata, ['k1'])
    tracker.observe(change('k9', 105, '4000'))
    expect(tracker.size).toBe(1)
    tracker.observe(change('k9', 111, '4100'))
    expect(tracker.size).toBe(0)
    tracker.add(metadata, ['k1'])
    tracker.observe({ headers: { control: 'up-to-date', global_last_seen_lsn: '5000' } })
    expect(tracker.size).toBe(0)
  })

  it('widens 32-bit xids across an epoch boundary', () => {
    const reference = (1n << 32n) + 5n
    expect(widenXid(3, reference)).toBe((1n << 32n) + 3n)
    expect(widenXid(0xfffffff0, reference)).toBe(0xfffffff0n)
  })
})

describe('subset requests against the server', () => {
  let server: TestShapeServer
  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: 'service', longPollTimeout: 1000 })
  })
  afterAll(async () => server?.close())

  const shapeParams = { table: 'issues', where: 'project_id = 1000000005', log: 'changes_only' }

  it.each(['POST', 'GET'] as const)(
    'fetches a page of rows with %s and records the exchange',
    async (method: SubsetMethod) => {
      const synced = await syncToEnd(server.url, shapeParams)
      const recorder = new ShapeRecorder()
      const result = await fetchSubset(
        {
          url: `${server.url}/v1/shape`,
          params: { ...shapeParams, handle: synced.handle, offset: synced.offset },
          headers: {},
          subset: { where: 'priority >= $1', params: { '1': '2' }, orderBy: 'id DESC', limit: 3 },
          method
        },
        { recorder }
      )
      const expected = await server.pool.query<{ id: string }>(
        'SELECT id::text AS id FROM issues WHERE project_id = 1000000005 AND priority >= 2 ORDER BY issues.id DESC LIMIT 3'
      )
      expect(result.rows.map((row) => row.value.id)).toEqual(expected.rows.map((row) => row.id))
      expect(result.rows.every((row) => row.headers.snapshot_mark === result.metadata.snapshot_mark)).toBe(true)
      expect(result.handle).toBe(synced.handle)
      expect(result.offset).toBe(synced.offset)
      expect(recorder.exchanges[0]?.request.method).toBe(method)
      expect(recorder.exchanges[0]?.response?.status).toBe(200)
    }
  )

  it('refuses an invalid subset before sending it, and reports the server’s 400', async () => {
    const request = {
      url: `${server.url}/v1/shape`,
      params: { ...shapeParams, offset: '-1' },
      headers: {},
      method: 'POST' as const
    }
    await expect(fetchSubset({ ...request, subset: { limit: 3 } })).rejects.toThrow(/orderBy is required/)
    await expect(fetchSubset({ ...request, subset: { where: 'secret = 1' } })).rejects.toMatchObject({
      kind: 'client',
      status: 400
    })
  })

  it('tells which concurrent transactions the snapshot holds', async () => {
    const synced = await syncToEnd(server.url, shapeParams)
    const writer = await server.pool.connect()
    try {
      await server.pool.query('UPDATE issues SET priority = 2 WHERE id = 4')
      await writer.query('BEGIN')
      await writer.query('UPDATE issues SET priority = 1 WHERE id = 44')
      const { rows } = await writer.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')
      const result = await fetchSubset({
        url: `${server.url}/v1/shape`,
        params: { ...shapeParams, handle: synced.handle, offset: synced.offset },
        headers: {},
        subset: { where: 'id IN (4, 44)', orderBy: 'id' },
        method: 'POST'
      })
      await writer.query('COMMIT')
      const tracker = new SnapshotTracker()
      tracker.add(
        result.metadata,
        result.rows.map((row) => row.key)
      )
      expect(result.rows.map((row) => [row.value.id, row.value.priority])).toEqual([
        ['4', '2'],
        ['44', '5']
      ])
      const inFlight = Number(BigInt(rows[0]?.xid ?? '0') & 0xffffffffn)
      expect(tracker.contains(change('"public"."issues"/"44"', inFlight))).toBe(false)
      expect(tracker.contains(change('"public"."issues"/"4"', Number(BigInt(result.metadata.xmin) - 1n)))).toBe(true)
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined)
      writer.release()
    }
  })
})
