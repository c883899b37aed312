import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { Shape } from '../../src/shared/shape-client'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const SECRET = 'commit-times-secret'
let server: TestShapeServer

beforeAll(async () => {
  server = await startTestShapeServer({ secret: SECRET, longPollTimeout: 2_000 })
  await server.pool.query('CREATE TABLE ct_items (id int PRIMARY KEY, title text)')
})
afterAll(async () => server?.close())

const commitTimes = (query: Record<string, string>) =>
  fetch(`${server.url}/v1/debug/commit-times?${new URLSearchParams(query)}`)

describe('GET /v1/debug/commit-times (a Syncscope extension)', () => {
  it('lists each transaction appended to a shape: its commit time in Postgres and its append time, by commit LSN', async () => {
    const shape = new Shape({ url: `${server.url}/v1/shape`, params: { table: 'ct_items', secret: SECRET } })
    void shape.start()
    try {
      await vi.waitFor(() => expect(shape.stream.current.phase).toBe('live'), { timeout: 15_000 })
      const lsns = new Set<string>()
      shape.subscribe((changes) => {
        for (const change of changes)
          if (change.kind === 'insert' && typeof change.message.headers.lsn === 'string')
            lsns.add(change.message.headers.lsn)
      })
      const started = Date.now()
      for (const id of [1, 2, 3]) await server.pool.query('INSERT INTO ct_items VALUES ($1, $2)', [id, `item ${id}`])
      await server.pool.query('INSERT INTO ct_items VALUES (4, $1), (5, $1)', ['two in one transaction'])
      await vi.waitFor(() => expect(shape.rows.size).toBe(5), { timeout: 15_000 })
      const handle = shape.stream.current.handle as string

      const response = await commitTimes({ handle, secret: SECRET })
      expect(response.status).toBe(200)
      expect(response.headers.get('cache-control')).toBe('no-store')
      const body = (await response.json()) as {
        handle: string
        transactions: Array<{ lsn: string; xid: number; committed_at: number; appended_at: number; changes: number }>
      }
      expect(body.handle).toBe(handle)
      expect(body.transactions.map((transaction) => transaction.lsn)).toEqual([...lsns])
      expect(body.transactions.map((transaction) => transaction.changes)).toEqual([1, 1, 1, 2])
      for (const transaction of body.transactions) {
        expect(transaction.committed_at).toBeGreaterThanOrEqual(started - 1_000)
        expect(transaction.appended_at).toBeGreaterThanOrEqual(transaction.committed_at - 5)
        expect(transaction.appended_at).toBeLessThanOrEqual(Date.now())
      }

      // after: only the transactions committed later than the LSN given
      const second = body.transactions[1]?.lsn as string
      const later = (await (await commitTimes({ handle, after: second, secret: SECRET })).json()) as typeof body
      expect(later.transactions.map((transaction) => transaction.lsn)).toEqual([...lsns].slice(2))
    } finally {
      shape.stop()
    }
  })

  it('answers 401 without the secret, 400 without a handle or with a malformed LSN, 404 for an unknown handle', async () => {
    expect((await commitTimes({ handle: 'x' })).status).toBe(401)
    const missing = await commitTimes({ secret: SECRET })
    expect(missing.status).toBe(400)
    expect(await missing.json()).toMatchObject({ errors: { handle: [expect.any(String)] } })
    const malformed = await commitTimes({ handle: 'x', after: '1/2', secret: SECRET })
    expect(malformed.status).toBe(400)
    expect(await malformed.json()).toMatchObject({ errors: { after: [expect.any(String)] } })
    const unknown = await commitTimes({ handle: 'no-such-handle', secret: SECRET })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toEqual({ message: 'No shape with handle no-such-handle' })
  })
})
