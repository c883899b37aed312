import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { describe, expect, it } from 'vitest'
import type { McpServerConfig, OAuthClientInfo, OAuthTokens } from '../../src/shared/contract/mcp-config'
import { Registry } from '../../src/main/mcp/registry'
import { filePersistence } from '../../src/main/mcp/persistence/oauth-persistence'
import { findFreePort } from '../../src/main/net/free-port'
import { authorizeInBrowser } from './support/oauth-server'
import { textOf, waitFor } from './support/processes'
import { useRegistryFixture } from './support/registry-fixture'

const mcp = useRegistryFixture()
const { opened, stops, protectedServer, completeLogin } = mcp

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
    expect((await mcp.registry.addServer(config)).state).toBe('needs-login')
    expect(as.requests).toHaveLength(0)
    await expect(mcp.registry.callTool('oauth', 'echo', { text: 'x' })).rejects.toMatchObject({ code: 'needs_login' })

    const { authorizeUrl } = await mcp.registry.login('oauth')
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
    expect(mcp.registry.describe('oauth').state).toBe('needs-login')
    const done = mcp.registry.waitForLogin('oauth')
    const accepted = await fetch(callback)
    expect(accepted.status).toBe(200)
    expect(await done).toBeNull()
    expect((await fetch(callback)).status).toBe(400)
    expect(mcp.registry.describe('oauth')).toMatchObject({
      state: 'connected',
      tokens: { hasAccessToken: true, hasRefreshToken: true, issuer: expect.stringContaining(as.issuer) }
    })
    expect(textOf(await mcp.registry.callTool('oauth', 'echo', { text: 'authorised' }))).toBe('authorised')
    expect(tokenEvents).toHaveLength(1)
    expect(clientEvents).toHaveLength(1)
    expect(clientEvents[0]).toMatchObject({
      issuer: expect.stringContaining(as.issuer),
      redirect_uris: [params.get('redirect_uri')]
    })
    const steps = mcp.registry.oauthExchanges('oauth').map((exchange) => exchange.step)
    expect(steps).toEqual(expect.arrayContaining(['discovery', 'registration', 'authorization', 'callback', 'token']))
    expect(JSON.stringify(mcp.registry.oauthExchanges('oauth'))).not.toContain(tokenEvents[0]?.accessToken)
  })

  it('refreshes on a 401 with rotation: one refresh POST, the new refresh token persisted, the old one dead', async () => {
    const { as, rs } = await protectedServer()
    const tokenEvents: OAuthTokens[] = []
    await mcp.registry.addServer({
      name: 'rot',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', onTokensChanged: (tokens) => void tokenEvents.push(tokens) }
    })
    await completeLogin('rot')
    const first = tokenEvents[0]
    rs.revoke(rs.lastJti() ?? '')
    expect(textOf(await mcp.registry.callTool('rot', 'echo', { text: 'after refresh' }))).toBe('after refresh')
    expect(as.tokenPosts('refresh_token')).toHaveLength(1)
    expect(tokenEvents).toHaveLength(2)
    expect(tokenEvents[1]?.refreshToken).toBeDefined()
    expect(tokenEvents[1]?.refreshToken).not.toBe(first?.refreshToken)
    expect(
      mcp.registry.oauthExchanges('rot').some((exchange) => exchange.step === 'refresh' && exchange.status === 200)
    ).toBe(true)
    const replay = await fetch(`${as.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: first?.refreshToken ?? '',
        client_id: mcp.registry.describe('rot').tokens?.clientId ?? ''
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
    await mcp.registry.addServer(config())
    await completeLogin('seeded')
    const stale: OAuthTokens = { ...persisted[0]!, refreshToken: 'revoked-or-rotated-away' }
    await mcp.registry.close()
    mcp.registry = new Registry({ openAuthorizeUrl: (url, server) => void opened.push({ url, server }) })
    rs.revoke(rs.lastJti() ?? '')
    const entry = await mcp.registry.addServer(config(stale))
    expect(entry.state).toBe('needs-login')
    await completeLogin('seeded')
    const fresh = persisted.at(-1)!
    expect(fresh.refreshToken).not.toBe(stale.refreshToken)
    // The host re-applies its config with the tokens it read earlier (stale): the mcp.registry keeps the fresh ones.
    await mcp.registry.applyConfig({ servers: [config(stale)] })
    expect(mcp.registry.describe('seeded').state).toBe('connected')
    expect(textOf(await mcp.registry.callTool('seeded', 'echo', { text: 'still in' }))).toBe('still in')
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
    await mcp.registry.addServer(await configFrom())
    await completeLogin('pre')
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
    const authorizeCount = as.requests.filter((request) => request.path === '/auth').length

    await mcp.registry.close()
    mcp.registry = new Registry()
    const restarted = await mcp.registry.addServer(await configFrom())
    expect(restarted.state).toBe('connected')
    expect(textOf(await mcp.registry.callTool('pre', 'echo', { text: 'restarted' }))).toBe('restarted')
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
    expect(as.requests.filter((request) => request.path === '/auth')).toHaveLength(authorizeCount)
  })

  it('binds a registered client to its issuer: another authorisation server gets a new registration, not that client', async () => {
    const first = await protectedServer()
    const clients: OAuthClientInfo[] = []
    await mcp.registry.addServer({
      name: 'moved',
      transport: 'http',
      url: first.rs.url,
      auth: { mode: 'authorizationCode', onClientRegistered: (client) => void clients.push(client) }
    })
    await completeLogin('moved')
    const second = await protectedServer()
    await mcp.registry.close()
    mcp.registry = new Registry()
    await mcp.registry.addServer({
      name: 'moved',
      transport: 'http',
      url: second.rs.url,
      auth: {
        mode: 'authorizationCode',
        client: clients[0]!,
        onClientRegistered: (client) => void clients.push(client)
      }
    })
    const { authorizeUrl } = await mcp.registry.login('moved')
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
    await mcp.registry.close()
    mcp.registry = new Registry({ oauthProviders: new Map([['mtls', prebuilt]]) })
    expect(
      (
        await mcp.registry.addServer({
          name: 'mtls',
          transport: 'http',
          url: rs.url,
          auth: { mode: 'authorizationCode', oauthProviderRef: 'mtls' }
        })
      ).state
    ).toBe('connected')
    expect(JSON.parse(textOf(await mcp.registry.callTool('mtls', 'whoami')))).toMatchObject({ client_id: 'cc-client' })
    const missing = await mcp.registry.addServer({
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
    await mcp.registry.addServer({ name: 'pkce', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    const { authorizeUrl } = await mcp.registry.login('pkce')
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
    await mcp.registry.addServer({ name: 'mixup', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    const { authorizeUrl } = await mcp.registry.login('mixup')
    const callback = new URL(await authorizeInBrowser(authorizeUrl))
    expect(callback.searchParams.get('iss')).toBeTruthy()
    callback.searchParams.set('iss', 'http://127.0.0.1:9/evil')
    const done = mcp.registry.waitForLogin('mixup')
    const refused = await fetch(callback)
    expect(refused.status).toBe(400)
    expect(await done).toMatchObject({
      code: 'needs_login',
      message: 'the callback came from another authorisation server'
    })
    expect(mcp.registry.describe('mixup').state).toBe('needs-login')
    expect(mcp.registry.oauthExchanges('mixup').at(-1)).toMatchObject({
      step: 'callback',
      status: 400,
      note: expect.stringMatching(/RFC 9207/)
    })
  })

  it('logout forgets the tokens and returns to needs-login', async () => {
    const { rs } = await protectedServer()
    await mcp.registry.addServer({ name: 'out', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await completeLogin('out')
    const entry = await mcp.registry.logout('out')
    expect(entry).toMatchObject({ state: 'needs-login', tokens: { hasAccessToken: false } })
    await waitFor('needs-login', () => mcp.registry.describe('out').state === 'needs-login')
  })
})
