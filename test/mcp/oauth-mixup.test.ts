import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { clientMetadataDocument } from '../../src/main/mcp/auth/client-metadata'
import { Registry } from '../../src/main/mcp/registry'
import { authorizeInBrowser } from './support/oauth-server'
import type { RunningMcpHttpServer } from './support/mcp-http-server'
import { textOf } from './support/processes'
import { startProtectedServer } from './support/protected-server'

// OAuth mix-up (RFC 9207 and the OAuth security BCP) on the loopback redirect: every server has a callback path of its
// own, also with the app's client ID metadata document; a callback is matched by path and state; `iss` is required
// where the authorisation server says it sends one, and must name the issuer the login went to.

const CLIENT_ID = 'https://syncscope.test/oauth/client-metadata.json'
const stops: Array<() => Promise<void>> = []
let registry: Registry | null = null

afterEach(async () => {
  await registry?.close()
  registry = null
  for (const stop of stops.splice(0).reverse()) await stop()
})

/** The app's document (listing these servers' callbacks), served on loopback for the HTTPS client_id. */
async function documentFetcher(servers: string[]): Promise<(url: string) => Promise<Response>> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(clientMetadataDocument(CLIENT_ID, servers)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  stops.push(() => new Promise((resolve) => server.close(() => resolve())))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return (url) => fetch(url.replace('https://syncscope.test', base))
}

/** An MCP server behind its own oidc-provider that accepts client ID metadata documents. */
const protectedServer = (fetchClientMetadata: (url: string) => Promise<Response>) =>
  startProtectedServer(stops, {}, { fetchClientMetadata })

async function registryWith(servers: Record<string, RunningMcpHttpServer>): Promise<Registry> {
  registry = new Registry({ clientMetadataUrl: CLIENT_ID })
  for (const [name, rs] of Object.entries(servers))
    await registry.addServer({ name, transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
  return registry
}

/** Where the browser lands after the person logs in at `authorizeUrl`: the callback URL, not yet delivered. */
const callbackOf = async (authorizeUrl: string) => new URL(await authorizeInBrowser(authorizeUrl))

async function deliver(url: URL): Promise<{ status: number; text: string }> {
  const response = await fetch(url)
  return { status: response.status, text: await response.text() }
}

describe('OAuth mix-up on the loopback callback', () => {
  it('keeps a callback path per server with a client ID metadata document, and matches callbacks by path and state', async () => {
    const fetchDocument = await documentFetcher(['alpha', 'beta'])
    const alpha = await protectedServer(fetchDocument)
    const beta = await protectedServer(fetchDocument)
    const app = await registryWith({ alpha: alpha.rs, beta: beta.rs })
    const alphaLogin = new URL((await app.login('alpha')).authorizeUrl)
    const betaLogin = new URL((await app.login('beta')).authorizeUrl)
    expect(alphaLogin.searchParams.get('client_id')).toBe(CLIENT_ID)
    expect(alphaLogin.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/callback\/alpha$/)
    expect(betaLogin.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/callback\/beta$/)

    const alphaCallback = await callbackOf(alphaLogin.href)
    // alpha's answer on the shared path, or on beta's: no server takes it
    const shared = new URL(alphaCallback)
    shared.pathname = '/oauth/callback'
    expect((await deliver(shared)).status).toBe(404)
    const onBeta = new URL(alphaCallback)
    onBeta.pathname = '/oauth/callback/beta'
    const refused = await deliver(onBeta)
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('does not match the login in flight')
    expect(app.describe('alpha').state).toBe('needs-login')
    expect(alpha.as.tokenPosts('authorization_code')).toEqual([])
    expect(beta.as.tokenPosts('authorization_code')).toEqual([])

    // each on its own path: both log in
    const done = Promise.all([app.waitForLogin('alpha'), app.waitForLogin('beta')])
    expect((await deliver(alphaCallback)).status).toBe(200)
    expect((await deliver(await callbackOf(betaLogin.href))).status).toBe(200)
    expect(await done).toEqual([null, null])
    expect(textOf(await app.callTool('alpha', 'echo', { text: 'a' }))).toBe('a')
    expect(textOf(await app.callTool('beta', 'echo', { text: 'b' }))).toBe('b')
  })

  it('requires iss where the authorisation server advertises authorization_response_iss_parameter_supported', async () => {
    const fetchDocument = await documentFetcher(['alpha'])
    const alpha = await protectedServer(fetchDocument)
    const metadata = (await (await fetch(`${alpha.as.issuer}/.well-known/oauth-authorization-server`)).json()) as {
      authorization_response_iss_parameter_supported?: boolean
    }
    expect(metadata.authorization_response_iss_parameter_supported).toBe(true)
    const app = await registryWith({ alpha: alpha.rs })
    const callback = await callbackOf((await app.login('alpha')).authorizeUrl)
    expect(callback.searchParams.get('iss')).toBe(alpha.as.issuer)
    const withoutIss = new URL(callback)
    withoutIss.searchParams.delete('iss')
    const done = app.waitForLogin('alpha')
    const refused = await deliver(withoutIss)
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('the authorisation server sends iss (RFC 9207) and this callback has none')
    expect(await done).toMatchObject({ code: 'needs_login' })
    expect(alpha.as.tokenPosts('authorization_code')).toEqual([])
    expect(app.oauthExchanges('alpha').at(-1)).toMatchObject({ step: 'callback', status: 400 })

    // an iss that names another issuer is refused as well
    const wrongIss = await callbackOf((await app.login('alpha')).authorizeUrl)
    wrongIss.searchParams.set('iss', 'http://127.0.0.1:1')
    expect((await deliver(wrongIss)).text).toContain('the callback came from another authorisation server')

    const ok = app.waitForLogin('alpha')
    expect((await deliver(await callbackOf((await app.login('alpha')).authorizeUrl))).status).toBe(200)
    expect(await ok).toBeNull()
  })

  it("an attacker's authorisation server that sends the person to an honest one gets no code: the honest iss is refused", async () => {
    const fetchDocument = await documentFetcher(['honest', 'evil'])
    const honest = await protectedServer(fetchDocument)
    const evil = await protectedServer(fetchDocument)
    const app = await registryWith({ honest: honest.rs, evil: evil.rs })
    // the person logs in to evil; its authorisation endpoint redirects to the honest server's with the same request
    const request = new URL((await app.login('evil')).authorizeUrl)
    const forwarded = new URL(`${honest.as.issuer}${request.pathname}${request.search}`)
    const callback = await callbackOf(forwarded.href)
    expect(callback.pathname).toBe('/oauth/callback/evil')
    expect(callback.searchParams.get('iss')).toBe(honest.as.issuer)
    const done = app.waitForLogin('evil')
    const refused = await deliver(callback)
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('the callback came from another authorisation server')
    expect(await done).toMatchObject({ code: 'needs_login' })
    // the honest code never went to the attacker's token endpoint
    expect(evil.as.tokenPosts()).toEqual([])
  })
})
