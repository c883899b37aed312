import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { grantQueryParams } from '../../src/shared/shape-client'
import {
  askGatekeeper,
  bearer,
  DENNIS,
  grant,
  GRACE,
  LINUS,
  messages,
  rowsOf,
  startProxyStack,
  type GatekeeperConfig,
  type ProxyStack
} from './support'

const IDP = 'https://idp.test/'
let stack: ProxyStack
let jwksServer: Server
let idpKey: CryptoKey

beforeAll(async () => {
  const pair = await generateKeyPair('RS256')
  idpKey = pair.privateKey
  const jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' }] }
  jwksServer = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks))
  )
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve))
  const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`
  stack = await startProxyStack({
    config: { auth: { jwks: { url: jwksUrl, issuer: IDP, audience: 'syncscope-app' } } }
  })
})
afterAll(async () => {
  await stack?.close()
  await new Promise((resolve) => jwksServer?.close(resolve))
})

/** The query string a client builds from a gatekeeper config (the shape client's own rule), plus protocol params. */
function clientQuery(params: GatekeeperConfig['params'], extra: Record<string, string> = {}): string {
  return new URLSearchParams({ ...grantQueryParams(params), ...extra }).toString()
}

const shapeRequest = (
  config: GatekeeperConfig,
  query: string,
  token = config.headers.Authorization.slice('Bearer '.length)
) => fetch(`${config.url}?${query}`, { headers: bearer(token) })

const codeOf = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code

describe('gatekeeper', () => {
  it('issues a short-lived token pinning the granted shape, and the client config to use it', async () => {
    const config = await grant(stack, GRACE)
    expect(config.url).toBe(`${stack.proxy.url}/proxy/v1/shape`)
    expect(config.params).toEqual({
      table: 'issues',
      columns: ['id', 'owner_id', 'priority', 'status', 'title'],
      where: 'owner_id = $1',
      params: { 1: GRACE }
    })
    const claims = decodeJwt(config.headers.Authorization.slice(7))
    expect(claims.aud).toBe('syncscope-proxy/shapes')
    expect((claims.exp as number) - (claims.iat as number)).toBe(300)
    expect(claims.shape).toEqual({
      table: 'public.issues',
      columns: ['id', 'owner_id', 'priority', 'status', 'title'],
      where: 'owner_id = $1',
      params: { 1: GRACE },
      replica: 'default',
      queryable_columns: ['id', 'owner_id', 'priority', 'status', 'title']
    })
    const response = await shapeRequest(config, clientQuery(config.params, { offset: '-1' }))
    expect(response.status).toBe(200)
    const rows = rowsOf(await messages(response))
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.every((row) => row.owner_id === GRACE)).toBe(true)
    expect(stack.proxy.exchanges().at(-1)?.upstream?.serverParams).toEqual([
      'table',
      'columns',
      'queryable_columns',
      'where',
      'params[1]'
    ])
  })

  it('narrows the asked shape by the policy on the parse tree: a client where cannot escape the row filter', async () => {
    const config = await grant(stack, GRACE, {
      where: 'priority > $1 OR true',
      params: ['0'],
      columns: ['id', 'owner_id']
    })
    expect(config.params.where).toBe('owner_id = $1 AND (priority > $2 OR true)')
    expect(config.params.params).toEqual({ 1: GRACE, 2: '0' })
    const rows = rowsOf(await messages(await shapeRequest(config, clientQuery(config.params, { offset: '-1' }))))
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.every((row) => row.owner_id === GRACE)).toBe(true)
    const breakOut = await askGatekeeper(stack, 'issues', { where: 'true) OR (true' }, await stack.accessToken(GRACE))
    expect(breakOut.status).toBe(400)
    expect(await codeOf(breakOut)).toBe('invalid_shape')
    const admin = await grant(stack, LINUS)
    expect(admin.params.where).toBeUndefined()
  })

  it.each<[string, unknown, string | null, number, string]>([
    ['users', {}, GRACE, 403, 'table_not_allowed'],
    ['"Issues"', {}, GRACE, 403, 'table_not_allowed'],
    ['issues', { columns: ['id', 'body'] }, GRACE, 403, 'columns_not_allowed'],
    ['issues', {}, 'visitor', 403, 'forbidden_role'],
    ['issues', {}, null, 401, 'missing_credentials'],
    ['issues', { table: 'users' }, GRACE, 400, 'invalid_shape_request'],
    ['a.b.c', {}, GRACE, 400, 'invalid_table']
  ])('denies %s with %j to %s: %i %s', async (table, body, user, status, code) => {
    const response = await askGatekeeper(stack, table, body, user === null ? null : await stack.accessToken(user))
    expect([response.status, await codeOf(response)]).toEqual([status, code])
  })

  it('answers 405 to a GET and 400 to a query string', async () => {
    const grace = await stack.accessToken(GRACE)
    expect((await fetch(`${stack.proxy.url}/gatekeeper/issues`, { headers: bearer(grace) })).status).toBe(405)
    expect(
      (await fetch(`${stack.proxy.url}/gatekeeper/issues?where=true`, { method: 'POST', headers: bearer(grace) }))
        .status
    ).toBe(400)
  })
})

describe('token-checking proxy', () => {
  it('accepts every spelling of the granted shape (identifiers, column order, where formatting)', async () => {
    const config = await grant(stack, GRACE)
    const token = config.headers.Authorization.slice(7)
    const spellings = [
      `table=ISSUES&columns=title,status,priority,owner_id,id&where=${encodeURIComponent('(OWNER_ID=$1)')}&params[1]=${GRACE}`,
      `table=${encodeURIComponent('"public"."issues"')}&columns=${encodeURIComponent('"id","owner_id","priority","status","title"')}&where=${encodeURIComponent('owner_id   =   $1')}&params[1]=${GRACE}`,
      `table=public.issues&columns=ID,Owner_Id,PRIORITY,status,title&where=${encodeURIComponent('owner_id = $1')}&params%5B1%5D=${GRACE}&replica=default`
    ]
    for (const query of spellings) {
      const response = await shapeRequest(config, `${query}&offset=-1`, token)
      expect([query, response.status]).toEqual([query, 200])
    }
  })

  it('answers 403 to any difference from the granted shape, and to a token for another shape', async () => {
    const config = await grant(stack, GRACE)
    const other = await grant(stack, DENNIS)
    const base = clientQuery(config.params, { offset: '-1' })
    const changed = (key: string, value: string | null) => {
      const query = new URLSearchParams(base)
      if (value === null) query.delete(key)
      else query.set(key, value)
      return query.toString()
    }
    const differences = [
      changed('table', 'comments'),
      changed('table', '"Issues"'),
      changed('where', 'owner_id = $1 OR true'),
      new URLSearchParams(
        [...new URLSearchParams(base)].filter(([key]) => key !== 'where' && key !== 'params[1]')
      ).toString(),
      changed('params[1]', DENNIS),
      changed('columns', '"id","owner_id"'),
      changed('columns', '"id","owner_id","priority","status","title","body"'),
      changed('replica', 'full'),
      clientQuery(other.params, { offset: '-1' })
    ]
    for (const query of differences) {
      const response = await shapeRequest(config, query.replace('params%5B1%5D', 'params[1]'))
      expect([query, response.status, await codeOf(response)]).toEqual([query, 403, 'shape_mismatch'])
    }
  })

  it.each([
    'table=users',
    'TABLE=users',
    `where=true`,
    `params[1]=${DENNIS}`,
    'params[2]=x',
    'secret=s',
    'queryable_columns=body',
    'columns=body',
    'offset=0_0'
  ])('refuses a second %s instead of reading one copy while upstream reads another', async (extra) => {
    const config = await grant(stack, GRACE)
    const response = await shapeRequest(config, `${clientQuery(config.params, { offset: '-1' })}&${extra}`)
    expect(response.status).toBe(400)
  })

  it('answers 401 to a missing, wrong-kind, expired, early, forged or claimless token', async () => {
    const config = await grant(stack, GRACE)
    const query = clientQuery(config.params, { offset: '-1' })
    const claims = decodeJwt(config.headers.Authorization.slice(7))
    const now = Math.floor(Date.now() / 1000)
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`
    const cases: Array<[string, string | null, string]> = [
      ['none', null, 'missing_credentials'],
      ['access token', await stack.accessToken(GRACE), 'invalid_token'],
      ['expired', await stack.sign({ ...claims, exp: now - 60 }), 'token_expired'],
      ['future nbf', await stack.sign({ ...claims, nbf: now + 600 }), 'token_not_yet_valid'],
      ['alg none', unsigned, 'invalid_token'],
      ['no shape claim', await stack.sign({ ...claims, shape: undefined }), 'invalid_token'],
      ['malformed shape claim', await stack.sign({ ...claims, shape: { table: 'issues', extra: 1 } }), 'invalid_token'],
      ['wrong issuer', await stack.sign({ ...claims, iss: IDP }), 'invalid_token']
    ]
    for (const [name, token, code] of cases) {
      const response = await fetch(`${config.url}?${query}`, { headers: token ? bearer(token) : {} })
      expect([name, response.status, await codeOf(response)]).toEqual([name, 401, code])
    }
  })

  it('forwards a POST subset through the token check; the body cannot redefine the shape', async () => {
    const config = await grant(stack, GRACE)
    const first = await shapeRequest(config, clientQuery(config.params, { offset: '-1' }))
    const handle = first.headers.get('service-handle') as string
    const post = (body: unknown) =>
      fetch(`${config.url}?${clientQuery(config.params, { offset: '-1', handle })}`, {
        method: 'POST',
        headers: { authorization: config.headers.Authorization, 'content-type': 'application/json' },
        body: JSON.stringify(body)
      })
    const narrowed = await post({ where: 'id > 1000' })
    expect(narrowed.status).toBe(200)
    const data = ((await narrowed.json()) as { data: Array<{ value: Record<string, string> }> }).data.map(
      (message) => message.value
    )
    expect(data.length).toBeGreaterThan(0)
    expect(data.every((row) => row.owner_id === GRACE && Number(row.id) > 1000)).toBe(true)
    expect((await post({ table: 'users' })).status).toBe(400)
    const oracle = await post({ where: "body LIKE 'Steps%'" })
    expect(oracle.status).toBe(403)
  })
})

describe('external identity (JWKS)', () => {
  /** A token of the identity provider for GRACE, valid for 5 minutes; `payload` replaces any of its claims. */
  const idpToken = (payload: Record<string, unknown>, key: CryptoKey = idpKey, kid = 'idp-1') => {
    const now = Math.floor(Date.now() / 1000)
    const claims = { roles: ['member'], iss: IDP, aud: 'syncscope-app', sub: GRACE, iat: now, exp: now + 300 }
    return new SignJWT({ ...claims, ...payload }).setProtectedHeader({ alg: 'RS256', kid }).sign(key)
  }
  const strangerKey = async () => (await generateKeyPair('RS256')).privateKey

  it('verifies tokens of the configured identity provider against its JWKS', async () => {
    const token = await idpToken({})
    const named = await fetch(`${stack.proxy.url}/api/shapes/my-issues?offset=-1`, { headers: bearer(token) })
    expect(named.status).toBe(200)
    expect(rowsOf(await messages(named)).every((row) => row.owner_id === GRACE)).toBe(true)
    expect((await askGatekeeper(stack, 'issues', {}, token)).status).toBe(200)
  })

  it.each<[string, () => Promise<string>, string]>([
    ['forged with the same kid', async () => idpToken({}, await strangerKey()), 'invalid_signature'],
    ['with an unknown kid', async () => idpToken({}, await strangerKey(), 'idp-2'), 'invalid_signature'],
    ['with the wrong audience', () => idpToken({ aud: 'other' }), 'invalid_token'],
    ['expired', () => idpToken({ exp: Math.floor(Date.now() / 1000) - 60 }), 'token_expired']
  ])('refuses a provider token %s', async (_name, token, code) => {
    const response = await fetch(`${stack.proxy.url}/api/shapes/my-issues?offset=-1`, {
      headers: bearer(await token())
    })
    expect([response.status, await codeOf(response)]).toEqual([401, code])
  })
})
