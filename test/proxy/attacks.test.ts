import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { grantQueryParams } from '../../src/shared/shape-client'
import {
  askGatekeeper,
  bearer,
  GRACE,
  grant,
  SHAPES,
  startProxyStack,
  USERS,
  type GatekeeperConfig,
  type ProxyStack
} from './support'

/** Issues hide `body`; users show id and name and let callers filter on karma too (queryableColumns). */
const GATEKEEPER = {
  tables: {
    issues: {
      roles: ['member'],
      columns: ['id', 'owner_id', 'title', 'priority', 'status'],
      rowFilter: { where: 'owner_id = $1', params: ['sub'] }
    },
    users: { columns: ['id', 'name'], queryableColumns: ['id', 'name', 'karma'] }
  }
}

let stack: ProxyStack
beforeAll(async () => {
  stack = await startProxyStack({ config: { users: USERS, shapes: SHAPES, gatekeeper: GATEKEEPER } })
})
afterAll(() => stack?.close())

const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { code: string; message: string } }).error

/** Conditions on the hidden column `body`, in every disguise a caller could try. */
const ORACLES = [
  "body LIKE 'x%'",
  `"body" LIKE 'x%'`,
  "BODY LIKE 'x%'",
  "Body like 'x%'",
  "lower(body) LIKE 'x%'",
  "body::text LIKE 'x%'",
  "CAST(body AS text) LIKE 'x%'",
  "id > 0 AND (priority = 1 OR body LIKE 'x%')",
  "coalesce(body, '') LIKE 'x%'",
  "CASE WHEN body LIKE 'x%' THEN true ELSE false END",
  'length(body) > 3',
  'NOT (body IS NULL)',
  "body = ANY(ARRAY['a', 'b'])",
  "(title || body) LIKE '%x%'",
  "issues.body LIKE 'x%'",
  "public.issues.body LIKE 'x%'",
  "issues::text LIKE '%x%'"
]

describe('gatekeeper: a requested where may only name columns the policy shows', () => {
  it.each(ORACLES)('refuses %s with 403 naming the column', async (where) => {
    const response = await askGatekeeper(stack, 'issues', { where }, await stack.accessToken(GRACE))
    expect(response.status).toBe(403)
    const error = await errorOf(response)
    expect(error.code).toBe('columns_not_allowed')
    expect(error.message).toMatch(/body|issues/)
  })

  it('refuses a subquery naming a hidden column of its own table', async () => {
    const response = await askGatekeeper(
      stack,
      'issues',
      { where: "id IN (SELECT id FROM issues WHERE body LIKE 'x%')" },
      await stack.accessToken(GRACE)
    )
    expect(response.status).toBe(403)
    expect(await errorOf(response)).toEqual({
      code: 'columns_not_allowed',
      message: expect.stringContaining('names body of issues') as string
    })
  })

  it.each(["priority = 1 AND title LIKE 'a%'", `"title" LIKE 'a%'`, "TITLE like 'a%'", 'lower(title) = $1'])(
    'grants %s',
    async (where) => {
      const response = await askGatekeeper(
        stack,
        'issues',
        { where, ...(where.includes('$1') ? { params: ['x'] } : {}) },
        await stack.accessToken(GRACE)
      )
      expect(response.status).toBe(200)
    }
  )

  it('lets queryableColumns be filtered on although they are not shown, and nothing beyond them', async () => {
    const token = await stack.accessToken(GRACE)
    expect((await askGatekeeper(stack, 'users', { where: 'karma > 3' }, token)).status).toBe(200)
    const email = await askGatekeeper(stack, 'users', { where: "email LIKE 'a%'" }, token)
    expect(email.status).toBe(403)
    expect((await errorOf(email)).message).toContain('email')
  })
})

/** The subsets a granted client could request: each names `body`. */
function subsetAttacks(): Array<{ name: string; query?: Record<string, string>; body?: unknown }> {
  return [
    { name: 'subset__where', query: { subset__where: "body LIKE 'x%'" } },
    { name: 'subset__where quoted', query: { subset__where: `"body" LIKE 'x%'` } },
    { name: 'subset__order_by', query: { subset__order_by: 'body DESC', subset__limit: '1' } },
    { name: 'POST where', body: { where: "lower(BODY) LIKE 'x%'" } },
    { name: 'POST order_by', body: { order_by: 'id, "body" DESC NULLS LAST', limit: 1 } },
    {
      name: 'POST where_expr',
      body: {
        where: 'title LIKE $1',
        params: { 1: 'x%' },
        where_expr: {
          type: 'func',
          name: 'like',
          args: [
            { type: 'ref', column: 'body' },
            { type: 'val', paramIndex: 1 }
          ]
        }
      }
    },
    {
      name: 'a subquery in subset__where',
      query: { subset__where: "id IN (SELECT id FROM issues WHERE body LIKE 'x%')" }
    },
    {
      name: 'POST order_by_expr',
      body: { order_by: 'id', order_by_expr: [{ column: 'body', direction: 'asc' }], limit: 1 }
    }
  ]
}

async function send(
  url: string,
  token: string,
  attack: { query?: Record<string, string>; body?: unknown },
  base: Record<string, string>
): Promise<Response> {
  const query = new URLSearchParams({ ...base, offset: '-1', ...attack.query }).toString()
  if (attack.body === undefined) return fetch(`${url}?${query}`, { headers: bearer(token) })
  return fetch(`${url}?${query}`, {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: JSON.stringify(attack.body)
  })
}

describe('subsets may only name columns the shape shows', () => {
  let config: GatekeeperConfig
  beforeAll(async () => {
    config = await grant(stack, GRACE)
  })

  it.each(subsetAttacks())('token-checking proxy refuses $name', async (attack) => {
    const response = await send(
      config.url,
      config.headers.Authorization.slice('Bearer '.length),
      attack,
      grantQueryParams(config.params)
    )
    expect(response.status).toBe(403)
    expect((await errorOf(response)).message).toMatch(/body/)
  })

  it.each(subsetAttacks())('named shape refuses $name', async (attack) => {
    const response = await send(`${stack.proxy.url}/api/shapes/my-issues`, await stack.accessToken(GRACE), attack, {})
    expect(response.status).toBe(403)
    expect((await errorOf(response)).message).toMatch(/body/)
  })

  it('still serves subsets on shown columns', async () => {
    const token = config.headers.Authorization.slice('Bearer '.length)
    expect(
      (
        await send(
          config.url,
          token,
          { query: { subset__where: 'priority = 1', subset__order_by: 'title', subset__limit: '2' } },
          grantQueryParams(config.params)
        )
      ).status
    ).toBe(200)
    const named = await send(
      `${stack.proxy.url}/api/shapes/my-issues`,
      await stack.accessToken(GRACE),
      { body: { where: 'id > 1000', order_by: 'priority DESC', limit: 5 } },
      {}
    )
    expect(named.status).toBe(200)
  })
})

describe('the proxy checks Host like the shape API', () => {
  it.each(['evil.test', 'evil.test:PORT', 'localhost.evil.test:PORT'])(
    'refuses Host %s (DNS rebinding)',
    async (host) => {
      const port = new URL(stack.proxy.url).port
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/api/shapes/my-issues?offset=-1',
            headers: { host: host.replace('PORT', port) }
          },
          (res) => {
            res.resume()
            resolve(res.statusCode ?? 0)
          }
        )
        req.on('error', reject)
        req.end()
      })
      expect(status).toBe(403)
    }
  )
})
