import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { McpHost } from '../../src/main/mcp/host'
import { fileSecretStore } from '../../src/main/mcp/persistence/secret-store'
import { Registry } from '../../src/main/mcp/registry'
import { authorizeInBrowser } from './support/oauth-server'
import { textOf } from './support/processes'
import { startProtectedServer } from './support/protected-server'
import { runMcpCli } from './support/run-cli'

// oidc-provider rotates refresh tokens: a second refresh with the same refresh token is refused (invalid_grant) and
// the whole grant revoked. Concurrent refreshes must therefore collapse into one, in one process and across processes.

const stops: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop()
})

const protectedServer = (refreshDelayMs: number) => startProtectedServer(stops, {}, { refreshDelayMs })

async function logIn(registry: Registry, name: string): Promise<void> {
  const { authorizeUrl } = await registry.login(name)
  const callback = await authorizeInBrowser(authorizeUrl)
  const done = registry.waitForLogin(name)
  await fetch(callback)
  expect(await done).toBeNull()
}

describe('token refresh is single-flight per server', () => {
  it('N concurrent calls that find the access token refused share one refresh; every call succeeds', async () => {
    const { as, rs } = await protectedServer(300)
    const registry = new Registry()
    stops.push(() => registry.close())
    await registry.addServer({ name: 'race', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await logIn(registry, 'race')
    rs.revoke(rs.lastJti()!)
    // staggered: some calls meet the 401 while the refresh is in flight, others after it answered
    const calls = Array.from({ length: 8 }, (_, i) =>
      new Promise((resolve) => setTimeout(resolve, i * 120)).then(() =>
        registry.callTool('race', 'echo', { text: `call ${i}` })
      )
    )
    const results = await Promise.all(calls)
    expect(results.map(textOf)).toEqual(Array.from({ length: 8 }, (_, i) => `call ${i}`))
    expect(as.tokenPosts('refresh_token'), `refused: ${rs.refusals.join('; ')}`).toMatchObject([{ status: 200 }])
    expect(registry.describe('race').state).toBe('connected')
  }, 60_000)

  it('a call whose token a refresh replaced while it waited for its 401 is sent again with the new token: one refresh', async () => {
    const { as, rs } = await startProtectedServer(stops, { unauthorizedDelayMs: 1_000 }, { refreshDelayMs: 300 })
    const registry = new Registry()
    stops.push(() => registry.close())
    await registry.addServer({ name: 'slow', transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await logIn(registry, 'slow')
    rs.revoke(rs.lastJti()!)
    const first = registry.callTool('slow', 'echo', { text: 'first' })
    // sent with the refused token too; its 401 comes after the first call's refresh has ended
    await new Promise((resolve) => setTimeout(resolve, 600))
    const second = registry.callTool('slow', 'echo', { text: 'second' })
    expect((await Promise.all([first, second])).map(textOf)).toEqual(['first', 'second'])
    expect(as.tokenPosts('refresh_token')).toMatchObject([{ status: 200 }])
  }, 60_000)

  it('two processes (the launcher and the app) with the same stored tokens: one refresh, both go on with the rotated tokens', async () => {
    const { as, rs } = await protectedServer(1_500)
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-refresh-race-'))
    stops.push(() => rm(dir, { recursive: true, force: true }))
    const dataDir = join(dir, 'data')
    await mkdir(dataDir)
    const host = new McpHost({
      workspace: dir,
      settingsFile: join(dataDir, 'settings.json'),
      secretStore: fileSecretStore(join(dataDir, 'mcp-secrets.json'))
    })
    await host.start()
    await host.save('shared', { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    await logIn(host.registry, 'shared')
    await host.close()
    rs.revoke(rs.lastJti()!)

    const cli = (text: string) =>
      runMcpCli([
        'call',
        'shared',
        'echo',
        '--args',
        JSON.stringify({ text }),
        '--data-dir',
        dataDir,
        '--workspace',
        dir
      ])
    const [first, second] = await Promise.all([cli('from one'), cli('from two')])
    const told = `refused: ${rs.refusals.join('; ')}; refreshes: ${as
      .tokenPosts('refresh_token')
      .map((post) => post.status)
      .join(', ')}`
    expect([first.stderr, second.stderr], told).toEqual(['', ''])
    expect([first.stdout, second.stdout]).toEqual(['from one\n', 'from two\n'])
    expect(as.tokenPosts('refresh_token')).toMatchObject([{ status: 200 }])
    // and the record left behind works for a third process
    const third = await cli('after')
    expect(third).toMatchObject({ code: 0, stdout: 'after\n' })
  }, 120_000)
})
