import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { decodeJwt } from 'jose'
import { clientMetadataDocument } from '../../src/main/mcp/auth/client-metadata'
import { McpHost } from '../../src/main/mcp/host'
import { fileSecretStore } from '../../src/main/mcp/persistence/secret-store'
import { Registry, type RegistryOptions } from '../../src/main/mcp/registry'
import type { OAuthTokens } from '../../src/shared/contract/mcp'
import { authorizeInBrowser, startAuthServer } from './support/oauth-server'
import { textOf, waitFor } from './support/processes'
import { browserThatLogsIn, loggedIn } from './support/logins'
import { startProtectedServer } from './support/protected-server'
import { runMcpCli, startMcpCli } from './support/run-cli'

// The MCP authorisation spec's newer parts against real pieces: SDK servers behind oidc-provider.

const stops: Array<() => Promise<void>> = []
let registry: Registry | null = null

afterEach(async () => {
  await registry?.close()
  registry = null
  for (const stop of stops.splice(0).reverse()) await stop()
})

const protectedServer = (
  gate: Parameters<typeof startProtectedServer>[1] = {},
  as: Parameters<typeof startProtectedServer>[2] = {}
) => startProtectedServer(stops, gate, as)

function newRegistry(options: RegistryOptions = {}): Registry {
  registry = new Registry(options)
  return registry
}

/** A registry whose "browser" logs in as soon as an authorisation URL opens and delivers the redirect. */
function registryWithBrowser(options: RegistryOptions = {}): { registry: Registry; opened: string[] } {
  const opened: string[] = []
  return { registry: newRegistry({ ...options, openAuthorizeUrl: browserThatLogsIn(opened) }), opened }
}

describe('protected resource metadata discovery (RFC 9728)', () => {
  it('finds the authorisation server from the resource_metadata of the 401 challenge', async () => {
    const { as, rs } = await protectedServer()
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({ name: 'named', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await loggedIn(target, 'named')
    expect(rs.metadataRequests).toContain('/.well-known/oauth-protected-resource/mcp')
    expect(new URL(opened[0]!).origin).toBe(as.issuer)
    expect(textOf(await target.callTool('named', 'echo', { text: 'found' }))).toBe('found')
  })

  it('finds it at the well-known path when the challenge names no metadata', async () => {
    const { as, rs } = await protectedServer({ challengeNamesMetadata: false })
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({ name: 'wellknown', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await loggedIn(target, 'wellknown')
    expect(rs.metadataRequests[0]).toBe('/.well-known/oauth-protected-resource/mcp')
    expect(new URL(opened[0]!).origin).toBe(as.issuer)
    expect(textOf(await target.callTool('wellknown', 'echo', { text: 'found' }))).toBe('found')
  })

  it('sends the resource indicator (RFC 8707) on the authorisation request and on every token request, refreshes included', async () => {
    const { as, rs } = await protectedServer()
    const { registry: target, opened } = registryWithBrowser()
    const tokens: OAuthTokens[] = []
    await target.addServer({
      name: 'ri',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', onTokensChanged: (next) => void tokens.push(next) }
    })
    await loggedIn(target, 'ri')
    rs.revoke(rs.lastJti() ?? '')
    expect(textOf(await target.callTool('ri', 'echo', { text: 'refreshed' }))).toBe('refreshed')
    expect(new URL(opened[0]!).searchParams.get('resource')).toBe(rs.url)
    const posts = as.tokenPosts()
    expect(posts[0]?.grantType).toBe('authorization_code')
    expect(posts.filter((post) => post.grantType === 'refresh_token').length).toBeGreaterThan(0)
    expect(posts.every((post) => post.resource === rs.url && post.status === 200)).toBe(true)
    expect(tokens.every((token) => decodeJwt(token.accessToken).aud === rs.url)).toBe(true)
  })
})

describe('client ID metadata documents', () => {
  const clientId = 'https://syncscope.test/oauth/client-metadata.json'

  /** The app's document, served over HTTP on loopback; oidc-provider's fetch reaches it for the HTTPS client_id. */
  async function documentServer(): Promise<{
    fetchClientMetadata: (url: string) => Promise<Response>
    fetched: string[]
  }> {
    const fetched: string[] = []
    const server = createServer((req, res) => {
      fetched.push(req.url ?? '')
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' })
      res.end(JSON.stringify(clientMetadataDocument(clientId, ['cimd', 'dcr', 'configured'])))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    stops.push(() => new Promise((resolve) => server.close(() => resolve())))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return { fetched, fetchClientMetadata: (url) => fetch(url.replace('https://syncscope.test', base)) }
  }

  it('uses the app document URL as client_id where the authorisation server accepts one: no registration', async () => {
    const documents = await documentServer()
    const { as, rs } = await protectedServer({}, { fetchClientMetadata: documents.fetchClientMetadata })
    const { registry: target, opened } = registryWithBrowser({ clientMetadataUrl: clientId })
    await target.addServer({ name: 'cimd', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await loggedIn(target, 'cimd')
    const authorize = new URL(opened[0]!)
    expect(authorize.searchParams.get('client_id')).toBe(clientId)
    expect(authorize.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/callback\/cimd$/)
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
    expect(documents.fetched).toEqual(['/oauth/client-metadata.json'])
    expect(as.tokenPosts('authorization_code')).toMatchObject([{ clientId, status: 200 }])
    expect(target.describe('cimd').tokens?.clientId).toBe(clientId)
    expect(textOf(await target.callTool('cimd', 'echo', { text: 'by document' }))).toBe('by document')
  })

  it('falls back to dynamic registration where the authorisation server does not accept documents', async () => {
    const { as, rs } = await protectedServer()
    const { registry: target, opened } = registryWithBrowser({ clientMetadataUrl: clientId })
    await target.addServer({ name: 'dcr', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await loggedIn(target, 'dcr')
    expect(as.requests.filter((request) => request.path === '/reg' && request.status === 201)).toHaveLength(1)
    expect(new URL(opened[0]!).searchParams.get('client_id')).not.toBe(clientId)
    expect(textOf(await target.callTool('dcr', 'echo', { text: 'registered' }))).toBe('registered')
  })

  it('uses the configured client where the authorisation server offers neither', async () => {
    const { as, rs } = await protectedServer(
      {},
      {
        registration: false,
        clients: [
          {
            client_id: 'configured',
            application_type: 'native',
            token_endpoint_auth_method: 'none',
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            redirect_uris: ['http://127.0.0.1/oauth/callback/configured']
          }
        ]
      }
    )
    const { registry: target, opened } = registryWithBrowser({ clientMetadataUrl: clientId })
    await target.addServer({
      name: 'configured',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', client: { clientId: 'configured' } }
    })
    await loggedIn(target, 'configured')
    expect(new URL(opened[0]!).searchParams.get('client_id')).toBe('configured')
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
    expect(textOf(await target.callTool('configured', 'echo', { text: 'configured' }))).toBe('configured')
  })
})

describe('the app client ID metadata URL as a setting (settings.json, UI, --client-metadata-url)', () => {
  const clientId = 'https://syncscope.test/oauth/client-metadata.json'

  async function documentFetcher(): Promise<(url: string) => Promise<Response>> {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(clientMetadataDocument(clientId, ['doc'])))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    stops.push(() => new Promise((resolve) => server.close(() => resolve())))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return (url) => fetch(url.replace('https://syncscope.test', base))
  }

  async function hostLogin(host: McpHost, name: string, opened: string[]): Promise<URL> {
    const done = host.registry.waitForLogin(name)
    const { authorizeUrl } = await host.registry.login(name)
    await fetch(await authorizeInBrowser(authorizeUrl))
    expect(await done).toBeNull()
    opened.push(authorizeUrl)
    return new URL(authorizeUrl)
  }

  it('settings.json names it: used where the server accepts documents (no registration); removed, the next login registers', async () => {
    const { as, rs } = await protectedServer({}, { fetchClientMetadata: await documentFetcher() })
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-cimd-'))
    stops.push(() => rm(dir, { recursive: true, force: true }))
    const settingsFile = join(dir, 'settings.json')
    await writeFile(
      settingsFile,
      JSON.stringify({
        mcp: {
          clientMetadataUrl: clientId,
          servers: { doc: { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } } }
        }
      })
    )
    const host = new McpHost({ workspace: null, settingsFile, secretStore: fileSecretStore(join(dir, 'secrets.json')) })
    stops.push(() => host.close())
    await host.start()
    expect(host.clientMetadata()).toMatchObject({ url: clientId, source: 'settings' })
    // what to publish at that URL: a callback per server that logs in with it
    expect(host.clientMetadata().document).toMatchObject({
      client_id: clientId,
      redirect_uris: ['http://127.0.0.1/oauth/callback/doc']
    })
    const opened: string[] = []
    const first = await hostLogin(host, 'doc', opened)
    expect(first.searchParams.get('client_id')).toBe(clientId)
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
    expect(textOf(await host.registry.callTool('doc', 'echo', { text: 'by document' }))).toBe('by document')

    // the same server also offers registration: without the setting, that is what the next login uses
    expect(await host.setClientMetadataUrl(null)).toEqual({ url: null, source: null, document: null })
    expect(JSON.parse(await readFile(settingsFile, 'utf8'))).not.toHaveProperty('mcp.clientMetadataUrl')
    await host.registry.logout('doc')
    await rm(join(dir, 'secrets.json'))
    const second = await hostLogin(host, 'doc', opened)
    expect(second.searchParams.get('client_id')).not.toBe(clientId)
    expect(as.requests.filter((request) => request.path === '/reg' && request.status === 201)).toHaveLength(1)
  })

  it('an invalid URL in settings.json is the file error naming it, and no document is used', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-cimd-'))
    stops.push(() => rm(dir, { recursive: true, force: true }))
    const settingsFile = join(dir, 'settings.json')
    await writeFile(
      settingsFile,
      JSON.stringify({ mcp: { clientMetadataUrl: 'http://syncscope.test/doc.json', servers: {} } })
    )
    const host = new McpHost({ workspace: null, settingsFile, secretStore: fileSecretStore(join(dir, 'secrets.json')) })
    stops.push(() => host.close())
    await host.start()
    expect(host.clientMetadata()).toEqual({ url: null, source: null, document: null })
    expect(host.sources()[0]?.error).toBe(
      "mcp.clientMetadataUrl must be an https:// URL with a path: where the app's client ID metadata document is served"
    )
  })

  it('the CLI flag wins over settings.json: `mcp login --client-metadata-url` presents it as client_id', async () => {
    const { as, rs } = await protectedServer({}, { fetchClientMetadata: await documentFetcher() })
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-cimd-cli-'))
    stops.push(() => rm(dir, { recursive: true, force: true }))
    await writeFile(
      join(dir, 'settings.json'),
      JSON.stringify({
        mcp: {
          clientMetadataUrl: 'https://elsewhere.test/x.json',
          servers: { doc: { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } } }
        }
      })
    )
    const bad = await runMcpCli(['list', '--data-dir', dir, '--client-metadata-url', 'http://plain.test/doc.json'])
    expect(bad).toMatchObject({
      code: 2,
      stderr:
        "syncscope mcp: --client-metadata-url must be an https:// URL with a path: where the app's client ID metadata document is served\n"
    })

    const login = startMcpCli([
      'login',
      'doc',
      '--no-open',
      '--data-dir',
      dir,
      '--workspace',
      dir,
      '--client-metadata-url',
      clientId
    ])
    const authorizeUrl = await waitFor('the login URL', () => /^\s+(http\S+)$/m.exec(login.stderr())?.[1], 60_000)
    expect(new URL(authorizeUrl).searchParams.get('client_id')).toBe(clientId)
    await fetch(await authorizeInBrowser(authorizeUrl))
    const done = await login.exited
    expect(done.code).toBe(0)
    expect(done.stdout).toContain('doc is connected')
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(0)
  }, 90_000)
})

describe('step-up on 403 insufficient_scope', () => {
  it('re-authorises with the scopes held plus the ones asked for, then retries the call once', async () => {
    const { as, rs } = await protectedServer({ toolScopes: { admin: ['mcp:admin'] } }, { extraScopes: ['mcp:admin'] })
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({
      name: 'step',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', scopes: ['mcp:tools'] }
    })
    await loggedIn(target, 'step')
    expect(new URL(opened[0]!).searchParams.get('scope')).toBe('mcp:tools')
    expect(textOf(await target.callTool('step', 'echo', { text: 'narrow' }))).toBe('narrow')

    expect(textOf(await target.callTool('step', 'admin'))).toBe('admin done')
    expect(opened).toHaveLength(2)
    expect(new URL(opened[1]!).searchParams.get('scope')?.split(' ').sort()).toEqual(['mcp:admin', 'mcp:tools'])
    // The timeline shows the wider grant in the decoded access token of the second token response.
    const granted = target
      .oauthExchanges('step')
      .filter((exchange) => exchange.step === 'token')
      .map((exchange) => exchange.claims?.scope)
    expect(granted).toEqual(['mcp:tools', 'mcp:tools mcp:admin'])
    expect(as.tokenPosts('refresh_token')).toHaveLength(0)
    const adminCalls = rs.requests.filter((headers) => headers.authorization).length
    expect(adminCalls).toBeGreaterThan(0)
    expect(target.oauthExchanges('step').some((exchange) => exchange.note?.startsWith('insufficient_scope'))).toBe(true)
    expect(textOf(await target.callTool('step', 'echo', { text: 'still fine' }))).toBe('still fine')
  })

  it('a scope the authorisation server does not know ends in one insufficient_scope error naming it, not a loop', async () => {
    const { as, rs } = await protectedServer({ toolScopes: { root: ['mcp:root'] } })
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({
      name: 'never',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', scopes: ['mcp:tools'] }
    })
    await loggedIn(target, 'never')
    await expect(target.callTool('never', 'root')).rejects.toMatchObject({
      code: 'insufficient_scope',
      extra: { scope: 'mcp:tools mcp:root' }
    })
    expect(as.requests.filter((request) => request.path === '/reg')).toHaveLength(2)
    expect(opened).toHaveLength(1)
  })
})

describe('step-up for every request, not only tools/call', () => {
  it('tools/list answered 403 insufficient_scope re-authorises with the wider scope and lists', async () => {
    const { rs } = await protectedServer(
      { methodScopes: { 'tools/list': ['mcp:list'] } },
      { extraScopes: ['mcp:list'] }
    )
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({
      name: 'lists',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', scopes: ['mcp:tools'] }
    })
    await loggedIn(target, 'lists')
    expect((await target.tools('lists')).map((tool) => tool.tool)).toEqual(['echo', 'whoami'])
    expect(opened).toHaveLength(2)
    expect(new URL(opened[1]!).searchParams.get('scope')?.split(' ').sort()).toEqual(['mcp:list', 'mcp:tools'])
    expect(target.oauthExchanges('lists').some((exchange) => exchange.note?.startsWith('insufficient_scope'))).toBe(
      true
    )
    // the wider grant stays: listing again needs no login
    expect(await target.tools('lists')).toHaveLength(2)
    expect(opened).toHaveLength(2)
  })

  it('initialize answered 403 insufficient_scope steps up too, then the tool call goes through', async () => {
    const { rs } = await protectedServer(
      { methodScopes: { initialize: ['mcp:connect'] } },
      { extraScopes: ['mcp:connect'] }
    )
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({
      name: 'init',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', scopes: ['mcp:tools'] }
    })
    const done = target.waitForLogin('init')
    await target.login('init')
    // the first login's connect is refused for its scope: the login reports it
    expect(await done).toMatchObject({ code: 'insufficient_scope', scope: 'mcp:tools mcp:connect' })
    expect(textOf(await target.callTool('init', 'echo', { text: 'connected' }))).toBe('connected')
    expect(opened).toHaveLength(2)
    expect(new URL(opened[1]!).searchParams.get('scope')?.split(' ').sort()).toEqual(['mcp:connect', 'mcp:tools'])
    expect(target.describe('init').state).toBe('connected')
  })
})

describe('tokens bound to their issuer', () => {
  it('after the resource moves to another authorisation server, the old tokens are sent to neither of them', async () => {
    const { as: first, rs, moveTo } = await protectedServer()
    const second = await startAuthServer({ resource: rs.url })
    stops.push(second.stop)
    const { registry: target, opened } = registryWithBrowser()
    const tokens: OAuthTokens[] = []
    await target.addServer({
      name: 'moving',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'authorizationCode', onTokensChanged: (next) => void tokens.push(next) }
    })
    await loggedIn(target, 'moving')
    expect(textOf(await target.callTool('moving', 'echo', { text: 'at first' }))).toBe('at first')
    const old = tokens[0]!
    const sentBefore = rs.requests.length

    moveTo(second)
    const done = target.waitForLogin('moving')
    await expect(target.callTool('moving', 'echo', { text: 'moved' })).rejects.toMatchObject({ code: 'needs_login' })
    expect(first.tokenPosts('refresh_token')).toHaveLength(0)
    expect(second.tokenPosts('refresh_token')).toHaveLength(0)

    await target.login('moving')
    expect(await done).toBeNull()
    expect(new URL(opened.at(-1)!).origin).toBe(second.issuer)
    expect(textOf(await target.callTool('moving', 'echo', { text: 'moved' }))).toBe('moved')
    const bearers = rs.requests.slice(sentBefore).map((headers) => headers.authorization)
    // One request found out (the old token, refused); none after it carried the old token again.
    expect(bearers.filter((bearer) => bearer === `Bearer ${old.accessToken}`)).toHaveLength(1)
    expect(bearers[0]).toBe(`Bearer ${old.accessToken}`)
    expect(decodeJwt(tokens.at(-1)!.accessToken).iss).toBe(second.issuer)
  })
})
