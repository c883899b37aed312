import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { gatekeeperStreamOptions, Shape, type ShapeStreamError } from '../../src/shared/shape-client'
import { DENNIS, GRACE, startProxyStack, until, type ProxyStack } from './support'

/** The app's own shape client through the gatekeeper and the token-checking proxy. */
let stack: ProxyStack
beforeAll(async () => {
  stack = await startProxyStack({
    longPollTimeout: 500,
    sseKeepAlive: 300,
    config: {
      gatekeeper: {
        lifetimeSeconds: 2,
        tables: {
          issues: { columns: ['id', 'owner_id', 'title'], rowFilter: { where: 'owner_id = $1', params: ['sub'] } }
        }
      }
    }
  })
})
afterAll(() => stack?.close())

/** Stream options from the gatekeeper for a user's issues, renewed there on a 401 (the shape token expired). */
function throughGatekeeper(userId: string) {
  return gatekeeperStreamOptions({
    url: `${stack.proxy.url}/gatekeeper/issues`,
    shape: {},
    headers: { authorization: async () => `Bearer ${await stack.accessToken(userId)}` }
  })
}

const titles = (shape: Shape) => [...shape.rows.values()].map((row) => row.title)

describe('the shape client through the gatekeeper', () => {
  it('refreshes its token at the gatekeeper on 401 and goes on with the same shape', async () => {
    const { onError, ...options } = await throughGatekeeper(GRACE)
    const statuses: Array<number | null> = []
    const shape = new Shape({
      ...options,
      live: 'long-poll',
      onError: (error: ShapeStreamError) => {
        statuses.push(error.status)
        return onError(error)
      }
    })
    void shape.start()
    try {
      await until(() => shape.stream.current.upToDate, 'the initial sync')
      expect([...shape.rows.values()].every((row) => row.owner_id === GRACE)).toBe(true)
      const handle = shape.stream.current.handle
      await new Promise((resolve) => setTimeout(resolve, 2600))
      await stack.shapes.pool.query(
        `INSERT INTO issues (id, project_id, owner_id, title) VALUES (92001, 1000000001, $1, 'grace after expiry')`,
        [GRACE]
      )
      await until(() => titles(shape).includes('grace after expiry'), 'the change after the refresh')
      expect(statuses).toContain(401)
      expect(shape.stream.current.handle).toBe(handle)
    } finally {
      shape.stop()
    }
  })

  it('lives on SSE through the proxy without falling back to long-polling', async () => {
    const { url, params, headers } = await throughGatekeeper(DENNIS)
    const shape = new Shape({ url, params, headers, live: 'sse' })
    void shape.start()
    try {
      await until(() => shape.stream.current.upToDate, 'the initial sync')
      await new Promise((resolve) => setTimeout(resolve, 200))
      await stack.shapes.pool.query(
        `INSERT INTO issues (id, project_id, owner_id, title) VALUES (92002, 1000000001, $1, 'dennis over sse')`,
        [DENNIS]
      )
      await until(() => titles(shape).includes('dennis over sse'), 'the SSE change')
      expect(shape.stream.current.liveMode).toBe('sse')
      expect(shape.stream.current.sseFellBack).toBe(false)
    } finally {
      shape.stop()
    }
  })
})
