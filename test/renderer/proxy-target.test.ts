import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { proxyStreamTarget, type FetchUserToken } from '../../src/renderer/features/shapes/proxy-target'
import type { UserToken } from '../../src/shared/contract/proxy'
import { Shape, type ShapeDraft } from '../../src/shared/shape-client'
import { GRACE, startProxyStack, until, type ProxyStack } from '../proxy/support'

/** The Shape workbench's proxy target (its token source and gatekeeper step) with the shape client, against a real proxy. */
let stack: ProxyStack
beforeAll(async () => {
  stack = await startProxyStack({
    longPollTimeout: 500,
    config: {
      gatekeeper: {
        lifetimeSeconds: 2,
        tables: {
          issues: {
            roles: ['member'],
            columns: ['id', 'owner_id', 'title', 'priority'],
            rowFilter: { where: 'owner_id = $1', params: ['sub'] }
          }
        }
      }
    }
  })
})
afterAll(() => stack?.close())

const DEFINITION: ShapeDraft = { table: 'issues', columns: [], where: '', params: [], replica: 'default', log: 'full' }

/** Tokens as main hands them out (`proxy.userToken`), counting the calls. */
function tokenCounter(first?: UserToken): { fetchToken: FetchUserToken; calls: () => number } {
  let calls = 0
  return {
    calls: () => calls,
    fetchToken: async (userId) => {
      calls += 1
      if (calls === 1 && first) return first
      return { token: await stack.accessToken(userId), expiresAt: new Date(Date.now() + 3_600_000).toISOString() }
    }
  }
}

describe('the workbench proxy target', () => {
  it('calls a named shape as the user, and on a 401 asks main for a new token and goes on', async () => {
    const now = Math.floor(Date.now() / 1000)
    // a token the proxy refuses although the app believed it valid (expired early: clock skew, keys renewed)
    const refused = await stack.sign({
      sub: GRACE,
      roles: ['member'],
      iss: 'syncscope-local',
      aud: 'syncscope-proxy',
      iat: now - 120,
      exp: now - 60
    })
    const tokens = tokenCounter({ token: refused, expiresAt: new Date(Date.now() + 600_000).toISOString() })
    const target = await proxyStreamTarget(
      stack.proxy,
      { kind: 'proxy', route: 'shape', shapeName: 'my-issues', userId: GRACE },
      DEFINITION,
      { fetchToken: tokens.fetchToken, note: () => {} }
    )
    expect(target.url).toBe(`${stack.proxy.url}/api/shapes/my-issues`)
    expect(target.params).toEqual({})
    const shape = new Shape({ ...target, live: 'off' })
    await shape.start()
    expect(shape.stream.current.error).toBeNull()
    expect(shape.rows.size).toBeGreaterThan(0)
    expect([...shape.rows.values()].every((row) => row.owner_id === GRACE)).toBe(true)
    expect(tokens.calls()).toBe(2)
    const statuses = shape.stream.recorder.exchanges.map((exchange) => exchange.response?.status)
    expect(statuses[0]).toBe(401)
    expect(statuses.at(-1)).toBe(200)
    const sent = shape.stream.recorder.exchanges
      .flatMap((exchange) => exchange.request.headers)
      .filter(([name]) => name === 'authorization')
    expect(sent.length).toBeGreaterThan(1)
    expect(sent.every(([, value]) => !value.includes(refused.slice(8)))).toBe(true)
  })

  it('goes through the gatekeeper for the composed shape, and back to it when the shape token expires mid-stream', async () => {
    const notes: string[] = []
    const tokens = tokenCounter()
    const definition: ShapeDraft = {
      ...DEFINITION,
      columns: ['id', 'owner_id', 'title'],
      where: 'priority >= $1',
      params: ['0']
    }
    const target = await proxyStreamTarget(
      stack.proxy,
      { kind: 'proxy', route: 'gatekeeper', shapeName: '', userId: GRACE },
      definition,
      { fetchToken: tokens.fetchToken, note: (text) => notes.push(text) }
    )
    expect(target.url).toBe(`${stack.proxy.url}/proxy/v1/shape`)
    expect(target.params).toMatchObject({
      table: 'issues',
      columns: '"id","owner_id","title"',
      where: 'owner_id = $1 AND priority >= $2',
      'params[1]': GRACE,
      'params[2]': '0'
    })
    expect(notes).toEqual([
      expect.stringContaining('the gatekeeper granted issues where owner_id = $1 AND priority >= $2')
    ])
    const shape = new Shape({ ...target, live: 'long-poll' })
    void shape.start()
    try {
      await until(() => shape.stream.current.upToDate, 'the initial sync')
      expect([...shape.rows.values()].every((row) => row.owner_id === GRACE)).toBe(true)
      await new Promise((resolve) => setTimeout(resolve, 2600))
      await stack.shapes.pool.query(
        `INSERT INTO issues (id, project_id, owner_id, title, priority) VALUES (93001, 1000000001, $1, 'after the shape token expired', 1)`,
        [GRACE]
      )
      await until(
        () => [...shape.rows.values()].some((row) => row.title === 'after the shape token expired'),
        'the change after the new grant'
      )
      expect(notes.length).toBeGreaterThanOrEqual(2)
      expect(shape.stream.recorder.exchanges.some((exchange) => exchange.response?.status === 401)).toBe(true)
    } finally {
      shape.stop()
    }
  })
})
