import { FetchError, Shape, ShapeStream, type Row } from '@electric-sql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { grant, GRACE, startProxyStack, type ProxyStack } from './support'

/** The reference client (`@electric-sql/client`) through the gatekeeper and the token-checking proxy. */
let stack: ProxyStack
beforeAll(async () => {
  stack = await startProxyStack({
    headerBrand: 'electric',
    longPollTimeout: 500,
    config: {
      upstream: { headerBrand: 'electric' },
      gatekeeper: {
        algorithm: 'HS256',
        lifetimeSeconds: 2,
        tables: {
          issues: { columns: ['id', 'owner_id', 'title'], rowFilter: { where: 'owner_id = $1', params: ['sub'] } }
        }
      }
    }
  })
})
afterAll(() => stack?.close())

describe('@electric-sql/client through the gatekeeper', () => {
  it('syncs the granted shape, goes back to the gatekeeper when the token expires mid-stream, and keeps the same shape', async () => {
    const config = await grant(stack, GRACE)
    const refreshes: number[] = []
    const stream = new ShapeStream<Row>({
      url: config.url,
      params: config.params as { table: string },
      headers: config.headers,
      onError: async (error) => {
        if (error instanceof FetchError && (error.status === 401 || error.status === 403)) {
          refreshes.push(error.status)
          return { headers: (await grant(stack, GRACE)).headers }
        }
        return undefined
      }
    })
    const shape = new Shape(stream)
    try {
      const rows = await shape.rows
      const owned = Number(
        (await stack.shapes.pool.query('SELECT count(*) FROM issues WHERE owner_id = $1', [GRACE])).rows[0].count
      )
      expect(rows.length).toBe(owned)
      expect(rows.every((row) => row.owner_id === GRACE)).toBe(true)
      const handle = stream.shapeHandle
      await new Promise((resolve) => setTimeout(resolve, 2600))
      await stack.shapes.pool.query(
        `INSERT INTO issues (id, project_id, owner_id, title) VALUES (91001, 1000000001, $1, 'after expiry')`,
        [GRACE]
      )
      await stack.shapes.pool.query(
        `INSERT INTO issues (id, project_id, owner_id, title) VALUES (91002, 1000000001, $1, 'not for grace')`,
        ['3e0469fb-1349-91f8-f75a-2760e409c6ed']
      )
      const deadline = Date.now() + 10_000
      while (!shape.currentRows.some((row) => row.title === 'after expiry')) {
        if (Date.now() > deadline) throw new Error(`the change never arrived; refreshes: ${refreshes.join(',')}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(refreshes).toContain(401)
      expect(stream.shapeHandle).toBe(handle)
      expect(shape.currentRows.some((row) => row.title === 'not for grace')).toBe(false)
    } finally {
      stream.unsubscribeAll()
    }
  })
})
