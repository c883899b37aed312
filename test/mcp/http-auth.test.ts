import { mkdtemp, rm } from 'node:fs/promises'
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { McpServerConfig, OAuthClientInfo, OAuthTokens } from '../../src/shared/contract/mcp'
import { Registry } from '../../src/main/mcp/registry'
import { filePersistence } from '../../src/main/mcp/persistence/oauth-persistence'
import { findFreePort } from '../../src/main/net/free-port'
import { authorizeInBrowser } from './support/oauth-server'
import { startMcpHttpServer, type RunningMcpHttpServer } from './support/mcp-http-server'
import { textOf, waitFor } from './support/processes'
import { startProtectedServer } from './support/protected-server'

const stops: Array<() => Promise<void>> = []
let registry: Registry
let opened: Array<{ url: string; server: string }>

beforeEach(() => {
  opened = []
  registry = new Registry({ openAuthorizeUrl: (url, server) => void opened.push({ url, server }) })
})

afterEach(async () => {
  await registry.close()
  for (const stop of stops.splice(0).reverse()) await stop()
})

async function resourceServer(gate: Parameters<typeof startMcpHttpServer>[0]): Promise<RunningMcpHttpServer> {
  const server = await startMcpHttpServer(gate)
  stops.push(server.stop)
  return server
}

const protectedServer = (clients: Array<Record<string, unknown>> = []) => startProtectedServer(stops, {}, { clients })

/** Follows the authorisation URL as a person would and delivers the redirect to the registry's loopback listener. */
async function completeLogin(name: string): Promise<string> {
  const { authorizeUrl } = await registry.login(name)
  const callback = await authorizeInBrowser(authorizeUrl)
  const done = registry.waitForLogin(name)
  const response = await fetch(callback)
  expect(await done).toBeNull()
  expect(response.status).toBe(200)
  return authorizeUrl
}

describe('streamable HTTP servers (SDK servers on loopback)', () => {
  it('connects without auth and calls a tool', async () => {
    const rs = await resourceServer({ kind: 'none' })
    const entry = await registry.addServer({
      name: 'open',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'none' },
      headers: { 'X-Team': 'sync' }
    })
    expect(entry.state).toBe('connected')
    expect((await registry.tools('open')).map((tool) => tool.name)).toEqual(['mcp__open__echo', 'mcp__open__whoami'])
    expect(textOf(await registry.callTool('open', 'echo', { text: 'hello' }))).toBe('hello')
    expect(rs.requests.every((headers) => headers['x-team'] === 'sync')).toBe(true)
  })

  it('recovers when a stateful server forgets the session (a restart): the next call opens a new one', async () => {
    const rs = await startMcpHttpServer({ kind: 'none' }, { stateful: true })
    stops.push(rs.stop)
    await registry.addServer({ name: 'stateful', transport: 'http', url: rs.url, auth: { mode: 'none' } })
    expect(textOf(await registry.callTool('stateful', 'echo', { text: 'one' }))).toBe('one')
    const sessionsBefore = new Set(rs.requests.map((headers) => headers['mcp-session-id']).filter(Boolean))
    rs.dropSessions()
    expect(textOf(await registry.callTool('stateful', 'echo', { text: 'two' }))).toBe('two')
    const sessionsAfter = new Set(rs.requests.map((headers) => headers['mcp-session-id']).filter(Boolean))
    expect(sessionsAfter.size).toBe(sessionsBefore.size + 1)
    expect(registry.describe('stateful').state).toBe('connected')
  })

  it('with connectInBackground, applying a config does not wait for a server that never answers', async () => {
    const sockets: Socket[] = []
    const silent = createNetServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()))
    stops.push(async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    })
    await registry.close()
    registry = new Registry({ connectInBackground: true })
    const [entry] = await registry.applyConfig({
      servers: [
        {
          name: 'silent',
          transport: 'http',
          url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`,
          auth: { mode: 'none' },
          timeoutMs: 1_500
        }
      ]
    })
    // returned while the connect was still under way (it can only end in a timeout error)
    expect(entry?.state).toBe('connecting')
    await waitFor('the connect to time out', () => registry.describe('silent').state === 'error', 10_000)
    expect(registry.describe('silent').error).toEqual({
      code: 'timeout',
      message: 'silent did not answer initialize within 1500 ms'
    })
  })

  it('sends the API key in the configured header with its prefix; a wrong key is an error entry, not a crash', async () => {
    const rs = await resourceServer({ kind: 'header', name: 'X-Api-Key', value: 'Key k-123' })
    const good = await registry.addServer({
      name: 'keyed',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'apiKey', key: 'k-123', headerName: 'X-Api-Key', valuePrefix: 'Key ' }
    })
    expect(good.state).toBe('connected')
    expect(textOf(await registry.callTool('keyed', 'echo', { text: 'ok' }))).toBe('ok')
    const bearer = await resourceServer({ kind: 'header', name: 'Authorization', value: 'Bearer k-9' })
    expect(
      (
        await registry.addServer({
          name: 'bearer',
          transport: 'http',
          url: bearer.url,
          auth: { mode: 'apiKey', key: 'k-9', valuePrefix: 'Bearer ' }
        })
      ).state
    ).toBe('connected')
    const bad = await registry.addServer({
      name: 'wrong',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'apiKey', key: 'nope', headerName: 'X-Api-Key' }
    })
    expect(bad).toMatchObject({
      state: 'error',
      error: { code: 'auth_unavailable', message: expect.stringMatching(/refused the credentials \(HTTP 401\)/) }
    })
    expect(JSON.stringify(registry.list())).not.toContain('k-123')
  })

  it('clientCredentials: exchanges once, caches, and answers a 401 with exactly one re-exchange for concurrent calls', async () => {
    const { as, rs } = await protectedServer([
      {
        client_id: 'cc-client',
        client_secret: 'cc-secret-0123456789',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: []
      }
    ])
    const entry = await registry.addServer({
      name: 'machine',
      transport: 'http',
      url: rs.url,
      auth: {
        mode: 'clientCredentials',
        tokenUrl: `${as.issuer}/token`,
        clientId: 'cc-client',
        clientSecret: 'cc-secret-0123456789',
        scopes: ['mcp:tools'],
        resource: rs.url
      }
    })
    expect(entry.state).toBe('connected')
    await registry.callTool('machine', 'echo', { text: 'a' })
    expect(as.tokenPosts('client_credentials')).toHaveLength(1)
    rs.revoke(rs.lastJti() ?? '')
    const results = await Promise.all(['x', 'y', 'z'].map((text) => registry.callTool('machine', 'echo', { text })))
    expect(results.map(textOf)).toEqual(['x', 'y', 'z'])
    expect(as.tokenPosts('client_credentials')).toHaveLength(2)
    const caller = JSON.parse(textOf(await registry.callTool('machine', 'whoami'))) as {
      client_id: string
      scope: string
    }
    expect(caller).toMatchObject({ client_id: 'cc-client', scope: 'mcp:tools' })
  })

  it('clientCredentials with a wrong secret is an error entry naming the token endpoint', async () => {
    const { as, rs } = await protectedServer([
      {
        client_id: 'cc-client',
        client_secret: 'right-secret-0123',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: []
      }
    ])
    const entry = await registry.addServer({
      name: 'm',
      transport: 'http',
      url: rs.url,
      auth: {
        mode: 'clientCredentials',
        tokenUrl: `${as.issuer}/token`,
        clientId: 'cc-client',
        clientSecret: 'wrong-secret'
      }
    })
    expect(entry).toMatchObject({
      state: 'error',
      error: { message: expect.stringMatching(/refused the client credentials \(401 invalid_client/) }
    })
  })
})

describe('authorizationCode against a real authorisation server (oidc-provider)', () => {
  it('runs discovery, registration and PKCE with state; refuses a wrong state; persists via the hooks', async () => {
    const { as, rs } = await protectedServer()
    const tokenEvents: OAuthTokens[] = []
    const clientEvents: OAuthClientInfo[] = []
    const config: McpServerConfig = {
      name: 'oauth',
      transport: 'http',
      url: rs.url,
      auth: {
        mode: 'authorizationCode',
        onTokensChanged: (tokens) => void tokenEvents.push(tokens),
        onClientRegistered: (client) => void clientEvents.push(client)
      }
    }
    expect((await registry.addServer(config)).state).toBe('needs-login')
    expect(as.requests).toHaveLength(0)
    await expect(registry.callTool('oauth', 'echo', { text: 'x' })).rejects.toMatchObject({ code: 'needs_login' })

    const { authorizeUrl } = await registry.login('oauth')
    expect(opened).toEqual([{ url: authorizeUrl, server: 'oauth' }])
    const params = new URL(authorizeUrl).searchParams
    expect(params.get('code_challenge_method')).toBe('S256')
    expect(params.get('state')).toMatch(/^[\w-]{20,}$/)
    expect(params.get('resource')).toBe(rs.url)
    expect(params.get('scope')).toBe('mcp:tools')
    expect(params.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/callback\/oauth$/)
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(1)

    const callback = new URL(await authorizeInBrowser(authorizeUrl))
    expect(callback.searchParams.get('state')).toBe(params.get('state'))
    const forged = new URL(callback)
    forged.searchParams.set('state', 'forged-state')
    const refused = await fetch(forged)
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain('state parameter does not match')
    expect(registry.describe('oauth').state).toBe('needs-login')
    const done = registry.waitForLogin('oauth')
    const accepted = await fetch(callback)
    expect(accepted.status).toBe(200)
    expect(await done).toBeNull()
    expect((await fetch(callback)).status).toBe(400)
    expect(registry.describe('oauth')).toMatchObject({
      state: 'connected',
      tokens: { hasAccessToken: true, hasRefreshToken: true, issuer: expect.stringContaining(as.issuer) }
    })
    expect(textOf(await registry.callTool('oauth', 'echo', { text: 'authorised' }))).toBe('authorised')
    expect(tokenEvents).toHaveLength(1)
    expect(clientEvents).toHaveLength(1)
    expect(clientEvents[0]).toMatchObject({
      issuer: expect.stringContaining(as.issuer),
      redirect_uris: [params.get('redirect_uri')]
    })
    const steps = registry.oauthExchanges('oauth').map((exchange) => exchange.step)
    expect(steps).toEqual(expect.arrayContaining(['discovery', 'registration', 'authorization', 'callback', 'token']))
    expect(JSON.stringify(registry.oauthExchanges('oauth'))).not.toContain(tokenEvents[0]?.accessToken)
  })

  it('refreshes on a 401 with rotation: one refresh POST, the new refresh token persisted, the old one dead', async () => {
    const { as, rs } = await protectedServer()
    const tokenEvents: OAuthTokens[] = []
    await registry.addServer({
      name: 'rot',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', onTokensChanged: (tokens) => void tokenEvents.push(tokens) }
    })
    await completeLogin('rot')
    const first = tokenEvents[0]
    rs.revoke(rs.lastJti() ?? '')
    expect(textOf(await registry.callTool('rot', 'echo', { text: 'after refresh' }))).toBe('after refresh')
    expect(as.tokenPosts('refresh_token')).toHaveLength(1)
    expect(tokenEvents).toHaveLength(2)
    expect(tokenEvents[1]?.refreshToken).toBeDefined()
    expect(tokenEvents[1]?.refreshToken).not.toBe(first?.refreshToken)
    expect(
      registry.oauthExchanges('rot').some((exchange) => exchange.step === 'refresh' && exchange.status === 200)
    ).toBe(true)
    const replay = await fetch(`${as.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: first?.refreshToken ?? '',
        client_id: registry.describe('rot').tokens?.clientId ?? ''
      })
    })
    expect(replay.status).toBe(400)
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('invalid_grant on refresh goes back to needs-login; after a new login stale seed tokens never replace the fresh ones', async () => {
    const { rs } = await protectedServer()
    const persisted: OAuthTokens[] = []
    const config = (tokens?: OAuthTokens): McpServerConfig => ({
      name: 'seeded',
      transport: 'http',
      url: rs.url,
      auth: {
        mode: 'authorizationCode',
        ...(tokens ? { tokens } : {}),
        onTokensChanged: (next) => void persisted.push(next)
      }
    })
    await registry.addServer(config())
    await completeLogin('seeded')
    const stale: OAuthTokens = { ...persisted[0]!, refreshToken: 'revoked-or-rotated-away' }
    await registry.close()
    registry = new Registry({ openAuthorizeUrl: (url, server) => void opened.push({ url, server }) })
    rs.revoke(rs.lastJti() ?? '')
    const entry = await registry.addServer(config(stale))
    expect(entry.state).toBe('needs-login')
    await completeLogin('seeded')
    const fresh = persisted.at(-1)!
    expect(fresh.refreshToken).not.toBe(stale.refreshToken)
    // The host re-applies its config with the tokens it read earlier (stale): the registry keeps the fresh ones.
    await registry.applyConfig({ servers: [config(stale)] })
    expect(registry.describe('seeded').state).toBe('connected')
    expect(textOf(await registry.callTool('seeded', 'echo', { text: 'still in' }))).toBe('still in')
  })

  it('uses a pre-registered client without dynamic registration, and restarts from persisted tokens with no flow', async () => {
    const port = await findFreePort()
    const redirectUri = `http://127.0.0.1:${port}/oauth/callback/pre`
    const { as, rs } = await protectedServer([
      {
        client_id: 'pre-client',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: [redirectUri]
      }
    ])
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-oauth-file-'))
    stops.push(() => rm(dir, { recursive: true, force: true }))
    const path = join(dir, 'oauth.json')
    const configFrom = async (): Promise<McpServerConfig> => ({
      name: 'pre',
      transport: 'http',
      url: rs.url,
      auth: {
        mode: 'authorizationCode',
        redirectUri,
        client: { clientId: 'pre-client' },
        ...(await filePersistence({ path, server: 'pre' }))
      }
    })
    await registry.addServer(await configFrom())
    await completeLogin('pre')
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
    const authorizeCount = as.requests.filter((request) => request.path === '/auth').length

    await registry.close()
    registry = new Registry()
    const restarted = await registry.addServer(await configFrom())
    expect(restarted.state).toBe('connected')
    expect(textOf(await registry.callTool('pre', 'echo', { text: 'restarted' }))).toBe('restarted')
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
    expect(as.requests.filter((request) => request.path === '/auth')).toHaveLength(authorizeCount)
  })

  it('binds a registered client to its issuer: another authorisation server gets a new registration, not that client', async () => {
    const first = await protectedServer()
    const clients: OAuthClientInfo[] = []
    await registry.addServer({
      name: 'moved',
      transport: 'http',
      url: first.rs.url,
      auth: { mode: 'authorizationCode', onClientRegistered: (client) => void clients.push(client) }
    })
    await completeLogin('moved')
    const second = await protectedServer()
    await registry.close()
    registry = new Registry()
    await registry.addServer({
      name: 'moved',
      transport: 'http',
      url: second.rs.url,
      auth: {
        mode: 'authorizationCode',
        client: clients[0]!,
        onClientRegistered: (client) => void clients.push(client)
      }
    })
    const { authorizeUrl } = await registry.login('moved')
    expect(second.as.requests.filter((request) => request.path === '/reg')).toHaveLength(1)
    expect(new URL(authorizeUrl).searchParams.get('client_id')).not.toBe(clients[0]?.clientId)
    expect(clients[1]?.issuer).toContain(second.as.issuer)
  })

  it('uses a pre-built provider named by oauthProviderRef, and reports an unknown reference', async () => {
    const { as, rs } = await protectedServer([
      {
        client_id: 'cc-client',
        client_secret: 'cc-secret-0123456789',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: []
      }
    ])
    const grant = await fetch(`${as.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('cc-client:cc-secret-0123456789').toString('base64')}`
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'mcp:tools', resource: rs.url })
    })
    const { access_token } = (await grant.json()) as { access_token: string }
    const prebuilt: OAuthClientProvider = {
      redirectUrl: 'http://127.0.0.1/unused',
      clientMetadata: { redirect_uris: ['http://127.0.0.1/unused'] },
      clientInformation: () => ({ client_id: 'cc-client' }),
      tokens: () => ({ access_token, token_type: 'Bearer' }),
      saveTokens: () => {},
      redirectToAuthorization: () => {},
      saveCodeVerifier: () => {},
      codeVerifier: () => ''
    }
    await registry.close()
    registry = new Registry({ oauthProviders: new Map([['mtls', prebuilt]]) })
    expect(
      (
        await registry.addServer({
          name: 'mtls',
          transport: 'http',
          url: rs.url,
          auth: { mode: 'authorizationCode', oauthProviderRef: 'mtls' }
        })
      ).state
    ).toBe('connected')
    expect(JSON.parse(textOf(await registry.callTool('mtls', 'whoami')))).toMatchObject({ client_id: 'cc-client' })
    const missing = await registry.addServer({
      name: 'nope',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', oauthProviderRef: 'absent' }
    })
    expect(missing).toMatchObject({
      state: 'error',
      error: { code: 'auth_unavailable', message: expect.stringMatching(/oauthProviderRef 'absent'/) }
    })
  })

  it('binds the code to its PKCE verifier: the code alone is useless at the token endpoint', async () => {
    const { as, rs } = await protectedServer()
    await registry.addServer({ name: 'pkce', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    const { authorizeUrl } = await registry.login('pkce')
    const params = new URL(authorizeUrl).searchParams
    const callback = new URL(await authorizeInBrowser(authorizeUrl))
    const stolen = await fetch(`${as.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') ?? '',
        code_verifier: 'a'.repeat(64),
        client_id: params.get('client_id') ?? '',
        redirect_uri: params.get('redirect_uri') ?? ''
      })
    })
    expect(stolen.status).toBe(400)
    expect(await stolen.json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('refuses a callback whose iss names another authorisation server (RFC 9207 mix-up defence)', async () => {
    const { rs } = await protectedServer()
    await registry.addServer({ name: 'mixup', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    const { authorizeUrl } = await registry.login('mixup')
    const callback = new URL(await authorizeInBrowser(authorizeUrl))
    expect(callback.searchParams.get('iss')).toBeTruthy()
    callback.searchParams.set('iss', 'http://127.0.0.1:9/evil')
    const done = registry.waitForLogin('mixup')
    const refused = await fetch(callback)
    expect(refused.status).toBe(400)
    expect(await done).toMatchObject({
      code: 'needs_login',
      message: 'the callback came from another authorisation server'
    })
    expect(registry.describe('mixup').state).toBe('needs-login')
    expect(registry.oauthExchanges('mixup').at(-1)).toMatchObject({
      step: 'callback',
      status: 400,
      note: expect.stringMatching(/RFC 9207/)
    })
  })

  it('logout forgets the tokens and returns to needs-login', async () => {
    const { rs } = await protectedServer()
    await registry.addServer({ name: 'out', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await completeLogin('out')
    const entry = await registry.logout('out')
    expect(entry).toMatchObject({ state: 'needs-login', tokens: { hasAccessToken: false } })
    await waitFor('needs-login', () => registry.describe('out').state === 'needs-login')
  })
})
