import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { Registry } from '../../src/main/mcp/registry'
import { browserThatLogsIn, loggedIn } from './support/logins'
import type { AuthServerOptions } from './support/oauth-server'
import { textOf } from './support/processes'
import { startProtectedServer } from './support/protected-server'

// How a login finds the authorisation server (MCP authorization, 2025-11-25): the protected resource metadata where
// the resource's 401 challenge names it (RFC 9728 §5.1), else at the well-known paths; then the authorisation
// server's metadata, for an issuer with a path, at RFC 8414's path-inserted place, then OpenID Connect's
// path-inserted one, then its appended one. SDK servers behind oidc-provider.

const stops: Array<() => Promise<void>> = []
let registry: Registry | null = null

afterEach(async () => {
  await registry?.close()
  registry = null
  for (const stop of stops.splice(0).reverse()) await stop()
})

/** A registry whose browser logs in at once and follows the redirect to the loopback callback. */
function registryWithBrowser(): { registry: Registry; opened: string[] } {
  const opened: string[] = []
  registry = new Registry({ openAuthorizeUrl: browserThatLogsIn(opened) })
  return { registry, opened }
}

const tenant = (metadataAt: NonNullable<AuthServerOptions['tenant']>['metadataAt']) => ({
  tenant: { path: '/tenant1', metadataAt }
})

describe('finding the authorisation server', () => {
  it('reads the protected resource metadata where the 401 challenge names it, at a path of its own', async () => {
    const { as, rs } = await startProtectedServer(stops, { metadataPath: '/custom/metadata/location.json' })
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({ name: 'custom', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await loggedIn(target, 'custom')
    expect(rs.metadataRequests[0]).toBe('/custom/metadata/location.json')
    expect(new URL(opened[0]!).origin).toBe(as.issuer)
    expect(textOf(await target.callTool('custom', 'echo', { text: 'found' }))).toBe('found')
  })

  it('asks for the scope the 401 challenge names, not every scope the metadata lists', async () => {
    const { rs } = await startProtectedServer(
      stops,
      { challengeScope: 'mcp:tools', toolScopes: { admin: ['mcp:admin'] } },
      { extraScopes: ['mcp:admin'] }
    )
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({ name: 'scoped', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await loggedIn(target, 'scoped')
    expect(new URL(opened[0]!).searchParams.get('scope')).toBe('mcp:tools')
  })

  it('reads metadata at a path the challenge names as discovery, under the 1 MiB cap (a gzip bomb there)', async () => {
    // a resource whose metadata is valid JSON followed by 64 MiB of spaces, gzipped to about 64 KiB
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"resource":"x"}'), Buffer.alloc(64 * 1024 * 1024, ' ')]))
    const server = createServer((req, res) => {
      if (req.url === '/custom/prm.json') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        return void res.end(bomb)
      }
      req.resume()
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${base}/custom/prm.json"` }).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    stops.push(() => new Promise((resolve) => server.close(() => resolve())))
    const { registry: target, opened } = registryWithBrowser()
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
    await target.addServer({ name: 'bomb', transport: 'http', url, auth: { mode: 'authorizationCode' } })
    // the SDK takes an unreadable metadata document for none, and the resource for its own authorisation server
    await expect(target.login('bomb')).rejects.toThrow(/HTTP 401/)
    expect(opened).toEqual([])
    // read as discovery (every discovery answer is read through the cap), not as an unbounded resource answer
    expect(target.oauthExchanges('bomb')).toContainEqual(
      expect.objectContaining({ step: 'discovery', url: `${new URL(url).origin}/custom/prm.json`, status: 200 })
    )
  })

  it.each([
    ['oauth-inserted', ['/.well-known/oauth-authorization-server/tenant1']],
    ['oidc-inserted', ['/.well-known/oauth-authorization-server/tenant1', '/.well-known/openid-configuration/tenant1']],
    [
      'oidc-appended',
      [
        '/.well-known/oauth-authorization-server/tenant1',
        '/.well-known/openid-configuration/tenant1',
        '/tenant1/.well-known/openid-configuration'
      ]
    ]
  ] as const)("finds an issuer-with-a-path's metadata %s, asking in the spec's order", async (metadataAt, asked) => {
    const { as, rs } = await startProtectedServer(
      stops,
      { metadataPath: '/custom/metadata/location.json' },
      tenant(metadataAt)
    )
    const { registry: target, opened } = registryWithBrowser()
    await target.addServer({ name: 'tenant', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await loggedIn(target, 'tenant')
    expect(as.issuer).toMatch(/\/tenant1$/)
    expect(as.metadataRequests.map((request) => request.path)).toEqual(asked)
    expect(opened[0]!.startsWith(`${as.issuer}/auth?`)).toBe(true)
    expect(textOf(await target.callTool('tenant', 'echo', { text: 'tenant' }))).toBe('tenant')
  })
})
