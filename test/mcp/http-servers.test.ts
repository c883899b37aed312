import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { Registry } from '../../src/main/mcp/registry'
import { startMcpHttpServer } from './support/mcp-http-server'
import { textOf, waitFor } from './support/processes'
import { useRegistryFixture } from './support/registry-fixture'

const mcp = useRegistryFixture()
const { stops, resourceServer, protectedServer } = mcp

describe('streamable HTTP servers (SDK servers on loopback)', () => {
  it('connects without auth and calls a tool', async () => {
    const rs = await resourceServer({ kind: 'none' })
    const entry = await mcp.registry.addServer({
      name: 'open',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'none' },
      headers: { 'X-Team': 'sync' }
    })
    expect(entry.state).toBe('connected')
    expect((await mcp.registry.tools('open')).map((tool) => tool.name)).toEqual([
      'mcp__open__echo',
      'mcp__open__whoami'
    ])
    expect(textOf(await mcp.registry.callTool('open', 'echo', { text: 'hello' }))).toBe('hello')
    expect(rs.requests.every((headers) => headers['x-team'] === 'sync')).toBe(true)
  })

  it('recovers when a stateful server forgets the session (a restart): the next call opens a new one', async () => {
    const rs = await startMcpHttpServer({ kind: 'none' }, { stateful: true })
    stops.push(rs.stop)
    await mcp.registry.addServer({ name: 'stateful', transport: 'http', url: rs.url, auth: { mode: 'none' } })
    expect(textOf(await mcp.registry.callTool('stateful', 'echo', { text: 'one' }))).toBe('one')
    const sessionsBefore = new Set(rs.requests.map((headers) => headers['mcp-session-id']).filter(Boolean))
    rs.dropSessions()
    expect(textOf(await mcp.registry.callTool('stateful', 'echo', { text: 'two' }))).toBe('two')
    const sessionsAfter = new Set(rs.requests.map((headers) => headers['mcp-session-id']).filter(Boolean))
    expect(sessionsAfter.size).toBe(sessionsBefore.size + 1)
    expect(mcp.registry.describe('stateful').state).toBe('connected')
  })

  it('with connectInBackground, applying a config does not wait for a server that never answers', async () => {
    const sockets: Socket[] = []
    const silent = createNetServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()))
    stops.push(async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    })
    await mcp.registry.close()
    mcp.registry = new Registry({ connectInBackground: true })
    const [entry] = await mcp.registry.applyConfig({
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
    await waitFor('the connect to time out', () => mcp.registry.describe('silent').state === 'error', 10_000)
    expect(mcp.registry.describe('silent').error).toEqual({
      code: 'timeout',
      message: 'silent did not answer initialize within 1500 ms'
    })
  })

  it('sends the API key in the configured header with its prefix; a wrong key is an error entry, not a crash', async () => {
    const rs = await resourceServer({ kind: 'header', name: 'X-Api-Key', value: 'Key k-123' })
    const good = await mcp.registry.addServer({
      name: 'keyed',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'apiKey', key: 'k-123', headerName: 'X-Api-Key', valuePrefix: 'Key ' }
    })
    expect(good.state).toBe('connected')
    expect(textOf(await mcp.registry.callTool('keyed', 'echo', { text: 'ok' }))).toBe('ok')
    const bearer = await resourceServer({ kind: 'header', name: 'Authorization', value: 'Bearer k-9' })
    expect(
      (
        await mcp.registry.addServer({
          name: 'bearer',
          transport: 'http',
          url: bearer.url,
          auth: { mode: 'apiKey', key: 'k-9', valuePrefix: 'Bearer ' }
        })
      ).state
    ).toBe('connected')
    const bad = await mcp.registry.addServer({
      name: 'wrong',
      transport: 'http',
      url: rs.url,
      auth: { mode: 'apiKey', key: 'nope', headerName: 'X-Api-Key' }
    })
    expect(bad).toMatchObject({
      state: 'error',
      error: { code: 'auth_unavailable', message: expect.stringMatching(/refused the credentials \(HTTP 401\)/) }
    })
    expect(JSON.stringify(mcp.registry.list())).not.toContain('k-123')
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
    const entry = await mcp.registry.addServer({
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
    await mcp.registry.callTool('machine', 'echo', { text: 'a' })
    expect(as.tokenPosts('client_credentials')).toHaveLength(1)
    rs.revoke(rs.lastJti() ?? '')
    const results = await Promise.all(['x', 'y', 'z'].map((text) => mcp.registry.callTool('machine', 'echo', { text })))
    expect(results.map(textOf)).toEqual(['x', 'y', 'z'])
    expect(as.tokenPosts('client_credentials')).toHaveLength(2)
    const caller = JSON.parse(textOf(await mcp.registry.callTool('machine', 'whoami'))) as {
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
    const entry = await mcp.registry.addServer({
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
