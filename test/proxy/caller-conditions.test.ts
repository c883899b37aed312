import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ProxyService } from '../../src/main/proxy/service'
import { grantQueryParams } from '../../src/shared/shape-client'
import {
  askGatekeeper,
  bearer,
  configFor,
  grant,
  GRACE,
  LINUS,
  messages,
  rowsOf,
  SHAPES,
  startProxyStack,
  type GatekeeperConfig,
  type ProxyStack
} from './support'

/** The config shipped with the app: its admin role may read `projects` with no column list and no row filter. */
const SAMPLE = JSON.parse(readFileSync(join(__dirname, '../../resources/proxy/sample-config.json'), 'utf8')) as {
  users: unknown
  shapes: unknown
  gatekeeper: unknown
}

/** Policies for subqueries that are granted: comments are filtered to their author, projects are for admins only. */
const GRANTS = {
  tables: {
    issues: { roles: ['member'], columns: ['id', 'project_id', 'owner_id', 'title', 'priority'] },
    comments: {
      roles: ['member'],
      columns: ['id', 'issue_id', 'author_id', 'created_at'],
      rowFilter: { where: 'author_id = $1', params: ['sub'] },
      privilegedRoles: ['admin']
    },
    projects: { roles: ['admin'] }
  }
}

let stack: ProxyStack
let grants: ProxyService
/** What reached a shape service standing behind a proxy with the GRANTS policies: each request's URL and body. */
let recorder: Server
const recorded: Array<{ url: URL; body: string }> = []
let recording: ProxyService

beforeAll(async () => {
  stack = await startProxyStack({
    config: { users: SAMPLE.users, shapes: SAMPLE.shapes, gatekeeper: SAMPLE.gatekeeper }
  })
  grants = await stack.startProxy(configFor(stack.shapes, { gatekeeper: GRANTS }))
  recorder = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      recorded.push({ url: new URL(req.url ?? '/', 'http://upstream.test'), body })
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]')
    })
  })
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve))
  const recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`
  recording = await stack.startProxy(
    configFor(stack.shapes, { shapes: SHAPES, gatekeeper: GRANTS, upstream: { url: recorderUrl } })
  )
})
afterAll(async () => {
  await stack?.close()
  await new Promise((resolve) => recorder?.close(resolve))
})

const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { code: string; message: string } }).error

const ask = async (proxy: ProxyService, table: string, body: unknown, user: string) =>
  fetch(`${proxy.url}/gatekeeper/${table}`, {
    method: 'POST',
    headers: { ...bearer(await stack.accessToken(user)), 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })

async function shapeRows(config: GatekeeperConfig): Promise<Array<Record<string, string | null>>> {
  const query = new URLSearchParams({ ...grantQueryParams(config.params), offset: '-1' })
  const response = await fetch(`${config.url}?${query}`, { headers: { authorization: config.headers.Authorization } })
  expect(response.status).toBe(200)
  return rowsOf(await messages(response))
}

describe('a subquery in a caller’s where is an oracle unless its table is granted', () => {
  it('the sample config’s admin cannot read users through /gatekeeper/projects, one character per request', async () => {
    const { rows } = await stack.shapes.pool.query<{ id: string; email: string }>(
      'SELECT p.id::text AS id, u.email FROM projects p JOIN users u ON u.id = p.owner_id ORDER BY p.id LIMIT 1'
    )
    const [{ id, email } = { id: '', email: '' }] = rows
    for (const where of [
      `id = ${id} AND owner_id IN (SELECT id FROM users WHERE email LIKE '${email.slice(0, 1)}%')`,
      `id = ${id} AND owner_id IN (SELECT id FROM users WHERE email LIKE 'a%')`
    ]) {
      const response = await askGatekeeper(stack, 'projects', { where }, await stack.accessToken(LINUS))
      expect(response.status, where).toBe(403)
      expect(await errorOf(response)).toEqual({
        code: 'table_not_allowed',
        message: 'the requested where reads users in a subquery, and no gatekeeper policy grants users'
      })
    }
  })

  it('puts the granted table’s row filter inside the subquery, bound to the caller', async () => {
    const config = (await (
      await ask(grants, 'issues', { where: 'id IN (SELECT issue_id FROM comments)' }, GRACE)
    ).json()) as GatekeeperConfig
    expect(config.params.where).toBe(`id IN (SELECT issue_id FROM comments WHERE author_id = '${GRACE}')`)
    const { rows } = await stack.shapes.pool.query<{ issue_id: number }>(
      'SELECT DISTINCT issue_id FROM comments WHERE author_id = $1 ORDER BY issue_id',
      [GRACE]
    )
    expect(rows.length).toBeGreaterThan(0)
    const ids = (await shapeRows(config)).map((row) => Number(row.id)).sort((a, b) => a - b)
    expect(ids).toEqual(rows.map((row) => row.issue_id))
  })

  it('leaves the filter out for a privileged role, and keeps the caller’s own condition beside it', async () => {
    const admin = (await (
      await ask(grants, 'issues', { where: 'id IN (SELECT issue_id FROM comments)' }, LINUS)
    ).json()) as GatekeeperConfig
    expect(admin.params.where).toBe('id IN (SELECT issue_id FROM comments)')
    const member = (await (
      await ask(
        grants,
        'issues',
        { where: 'id IN (SELECT issue_id FROM comments WHERE id = $1)', params: ['x'] },
        GRACE
      )
    ).json()) as GatekeeperConfig
    expect(member.params.where).toBe(`id IN (SELECT issue_id FROM comments WHERE author_id = '${GRACE}' AND id = $1)`)
  })

  it.each([
    [
      'a table whose roles the caller lacks',
      'project_id IN (SELECT id FROM projects)',
      'forbidden_role',
      /projects.*needs one of the roles admin/
    ],
    ['a table without a policy', 'owner_id IN (SELECT id FROM users)', 'table_not_allowed', /grants users/],
    [
      'a table read by a nested subquery',
      'id IN (SELECT issue_id FROM comments WHERE issue_id IN (SELECT id FROM issues WHERE project_id IN (SELECT id FROM projects)))',
      'forbidden_role',
      /projects/
    ],
    [
      'a column the granted table hides',
      "id IN (SELECT issue_id FROM comments WHERE body LIKE 'a%')",
      'columns_not_allowed',
      /names body of comments/
    ],
    [
      'a hidden column selected',
      'owner_id IN (SELECT author_id FROM comments WHERE edited)',
      'columns_not_allowed',
      /names edited of comments/
    ],
    ['EXISTS', 'EXISTS (SELECT 1 FROM comments)', 'subquery_not_allowed', /EXISTS/],
    ['a scalar subquery', '(SELECT max(id) FROM comments) IS NOT NULL', 'subquery_not_allowed', /scalar/],
    ['= ANY (SELECT …)', 'id = ANY (SELECT issue_id FROM comments)', 'subquery_not_allowed', /ANY/],
    [
      'a join',
      'id IN (SELECT c.issue_id FROM comments c JOIN users u ON u.id = c.author_id)',
      'subquery_not_allowed',
      /one table/
    ],
    [
      'a qualified column',
      'id IN (SELECT issue_id FROM comments WHERE issues.title IS NULL)',
      'subquery_not_allowed',
      /issues.title is qualified|names issues.title/
    ],
    ['SELECT *', 'id IN (SELECT * FROM comments)', 'subquery_not_allowed', /\*/],
    ['a UNION', 'id IN (SELECT issue_id FROM comments UNION SELECT id FROM users)', 'subquery_not_allowed', /clauses/],
    ['a LIMIT', 'id IN (SELECT issue_id FROM comments LIMIT 1)', 'subquery_not_allowed', /clauses/]
  ])('refuses a subquery on %s', async (_, where, code, message) => {
    const response = await ask(grants, 'issues', { where }, GRACE)
    expect(response.status).toBe(403)
    const error = await errorOf(response)
    expect(error.code).toBe(code)
    expect(error.message).toMatch(message)
  })

  it('grants nested subqueries on tables the caller holds', async () => {
    const where =
      'id IN (SELECT issue_id FROM comments WHERE issue_id IN (SELECT id FROM issues WHERE project_id IN (SELECT id FROM projects)))'
    expect((await ask(grants, 'issues', { where }, LINUS)).status).toBe(200)
  })
})

describe('subsets: the same rules for a subset’s where and order_by', () => {
  const oracle = "owner_id IN (SELECT id FROM users WHERE email LIKE 'a%')"

  it.each([
    ['subset__where', { subset__where: oracle }, undefined],
    ['subset__order_by', { subset__order_by: `${oracle} DESC`, subset__limit: '1' }, undefined],
    ['a POST body where', {}, { where: oracle }],
    ['a POST body order_by', {}, { order_by: `id, ${oracle}`, limit: 1 }]
  ])('named shape and token-checking proxy refuse a subquery on users in %s', async (_, query, body) => {
    const token = await stack.accessToken(GRACE)
    const admin = await grant(stack, LINUS, {}, 'projects')
    const targets = [
      { url: `${stack.proxy.url}/api/shapes/my-issues`, base: {}, token },
      { url: admin.url, base: grantQueryParams(admin.params), token: admin.headers.Authorization.slice(7) }
    ]
    for (const target of targets) {
      const search = new URLSearchParams({ ...target.base, offset: '-1', ...query })
      const response = await fetch(`${target.url}?${search}`, {
        method: body ? 'POST' : 'GET',
        headers: { ...bearer(target.token), ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {})
      })
      expect(response.status, target.url).toBe(403)
      expect(await errorOf(response)).toEqual({
        code: 'table_not_allowed',
        message: expect.stringMatching(
          /^the subset (where|order_by) \((query|body)\) reads users in a subquery/
        ) as string
      })
    }
  })

  it('forwards a subset’s subquery on a granted table with the row filter put inside it', async () => {
    const token = await stack.accessToken(GRACE)
    const where = 'id IN (SELECT issue_id FROM comments WHERE id IS NOT NULL)'
    const filtered = `id IN (SELECT issue_id FROM comments WHERE author_id = '${GRACE}' AND id IS NOT NULL)`
    const query = new URLSearchParams({ offset: '-1', subset__where: where, subset__order_by: 'id' })
    expect((await fetch(`${recording.url}/api/shapes/my-issues?${query}`, { headers: bearer(token) })).status).toBe(200)
    expect(recorded.at(-1)?.url.searchParams.get('subset__where')).toBe(filtered)
    expect(recorded.at(-1)?.url.searchParams.get('subset__order_by')).toBe('id')
    const posted = await fetch(`${recording.url}/api/shapes/my-issues?offset=-1`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ where, params: {}, limit: 5, order_by: 'id' })
    })
    expect(posted.status).toBe(200)
    expect(JSON.parse(recorded.at(-1)?.body ?? '{}')).toEqual({ where: filtered, params: {}, limit: 5, order_by: 'id' })
  })

  it('passes a subset without a subquery on as the client wrote it', async () => {
    const query = new URLSearchParams({ offset: '-1', subset__where: 'priority   >  1', subset__order_by: 'id' })
    await fetch(`${recording.url}/api/shapes/my-issues?${query}`, { headers: bearer(await stack.accessToken(GRACE)) })
    expect(recorded.at(-1)?.url.searchParams.get('subset__where')).toBe('priority   >  1')
  })
})

describe('caps on parameters and LIKE patterns: 400 naming the cap', () => {
  const long = (length: number) => '1'.repeat(length)

  it.each([
    [
      'a gatekeeper parameter',
      { where: 'title = $1', params: [long(80_000)] },
      /80,000 characters long \(params\[1\]: 80,000\).*\(MAX_PARAMS_LENGTH\)/
    ],
    [
      'a gatekeeper LIKE pattern',
      { where: `title LIKE '%${'_'.repeat(2_000)}'` },
      /at most 1,024 \(MAX_LIKE_PATTERN_LENGTH\)/
    ],
    [
      'a LIKE pattern in a parameter',
      { where: 'title ILIKE $1', params: [`%${'_'.repeat(2_000)}`] },
      /MAX_LIKE_PATTERN_LENGTH/
    ]
  ])('the gatekeeper refuses %s', async (_, body, message) => {
    const response = await askGatekeeper(stack, 'issues', body, await stack.accessToken(GRACE))
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('input_too_long')
    expect(error.message).toMatch(message)
  })

  it.each([
    [
      'a POST body parameter cast to float8',
      { where: 'priority < $1::float8', params: { 1: long(80_000) } },
      /MAX_PARAMS_LENGTH/
    ],
    ['a POST body LIKE pattern', { where: `title LIKE '${'%_'.repeat(600)}'` }, /MAX_LIKE_PATTERN_LENGTH/]
  ])('named shapes refuse a subset with %s', async (_, body, message) => {
    const response = await fetch(`${stack.proxy.url}/api/shapes/my-issues?offset=-1`, {
      method: 'POST',
      headers: { ...bearer(await stack.accessToken(GRACE)), 'content-type': 'application/json' },
      body: JSON.stringify(body)
    })
    expect(response.status).toBe(400)
    expect(await errorOf(response)).toEqual({
      code: 'input_too_long',
      message: expect.stringMatching(message) as string
    })
  })

  it('the shape API refuses them too, naming the cap', async () => {
    const shape = new URL('/v1/shape', stack.shapes.url)
    shape.search = new URLSearchParams({
      table: 'issues',
      offset: '-1',
      where: `title LIKE '${'_%'.repeat(600)}'`
    }).toString()
    const pattern = await fetch(shape)
    expect(pattern.status).toBe(400)
    expect(JSON.stringify(await pattern.json())).toContain('(MAX_LIKE_PATTERN_LENGTH)')
    shape.search = new URLSearchParams({ table: 'issues', offset: '-1' }).toString()
    const subset = await fetch(shape, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ where: 'priority < $1::float8', params: { 1: `${long(80_000)}x` } })
    })
    expect(subset.status).toBe(400)
    expect(JSON.stringify(await subset.json())).toContain('(MAX_PARAMS_LENGTH)')
  })
})
