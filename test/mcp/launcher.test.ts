import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpHost } from '../../src/main/mcp/host'
import { fileSecretStore } from '../../src/main/mcp/persistence/secret-store'
import { authorizeInBrowser, startAuthServer, type RunningAuthServer } from './support/oauth-server'
import { startMcpHttpServer, type RunningMcpHttpServer } from './support/mcp-http-server'
import { startAsHost } from './support/host-client'
import { textOf } from './support/processes'
import { runMcpCli } from './support/run-cli'

const ROOT = resolve(__dirname, '../..')
const FIXTURE = resolve(__dirname, 'support/stdio-fixture.mjs')
const API_TOKEN = 'tok-launcher-5ecret-1234'

let dir: string
let dataDir: string
let workspace: string
let cleanHome: string
let as: RunningAuthServer
let rs: RunningMcpHttpServer

const cli = (args: string[]) => runMcpCli([...args, '--data-dir', dataDir, '--workspace', workspace])

const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
  textOf((await client.callTool({ name, arguments: args })) as { content?: unknown })

describe('syncscope mcp run / export (the launcher other hosts start)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-launcher-'))
    dataDir = join(dir, 'data')
    workspace = join(dir, 'workspace')
    cleanHome = join(dir, 'clean-home')
    await Promise.all([mkdir(dataDir, { recursive: true }), mkdir(workspace), mkdir(cleanHome)])
    let issuer = ''
    rs = await startMcpHttpServer({ kind: 'oauth', issuer: () => issuer })
    as = await startAuthServer({ resource: rs.url })
    issuer = as.issuer
    // the app's own files: settings.json with a typed-in secret (kept in the store) and an OAuth server logged in
    const host = new McpHost({
      workspace,
      settingsFile: join(dataDir, 'settings.json'),
      secretStore: fileSecretStore(join(dataDir, 'mcp-secrets.json'))
    })
    await host.start()
    await host.save('fx', { transport: 'stdio', command: process.execPath, args: [FIXTURE], env: { API_TOKEN } })
    await host.save('secured', { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } })
    const { authorizeUrl } = await host.registry.login('secured')
    const callback = await authorizeInBrowser(authorizeUrl)
    const done = host.registry.waitForLogin('secured')
    await fetch(callback)
    expect(await done).toBeNull()
    await host.close()
  })
  afterAll(async () => {
    await as?.stop()
    await rs?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('exports entries that call the launcher, with absolute paths and no secret; a host starts them with an empty environment', async () => {
    const file = join(dir, 'claude_desktop_config.json')
    const preview = await cli(['export', '--to', 'claude-desktop', '--file', file])
    expect(preview.code).toBe(0)
    expect(preview.stdout).toContain('+     "fx": {')
    expect(preview.stderr).toContain('run again with --yes')
    await expect(readFile(file, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' })
    expect((await cli(['export', '--to', 'claude-desktop', '--file', file, '--yes'])).code).toBe(0)
    const text = await readFile(file, 'utf8')
    expect(text).not.toContain(API_TOKEN)
    const entries = (JSON.parse(text) as { mcpServers: Record<string, { command: string; args: string[] }> }).mcpServers
    expect(Object.keys(entries)).toEqual(['fx', 'secured'])
    expect(entries.fx).toEqual({
      command: process.execPath,
      args: [join(ROOT, 'bin/syncscope.js'), 'mcp', 'run', 'fx', '--data-dir', dataDir, '--workspace', workspace]
    })

    // stdio: the server runs as the launcher's child with the secret from the store in its environment
    const fx = await startAsHost(entries.fx!, cleanHome)
    expect(await call(fx.client, 'env', { name: 'API_TOKEN' })).toBe(API_TOKEN)
    expect((JSON.parse(await call(fx.client, 'where')) as { cwd: string }).cwd).toBe(workspace)
    await fx.client.close()

    // remote: bridged to stdio with the stored OAuth tokens; the access token is refused, so it is refreshed silently
    rs.revoke(rs.lastJti()!)
    const refreshesBefore = as.tokenPosts('refresh_token').length
    const secretsBefore = await readFile(join(dataDir, 'mcp-secrets.json'), 'utf8')
    const secured = await startAsHost(entries.secured!, cleanHome)
    const tools = await secured.client.listTools()
    expect(tools.tools.map((tool) => tool.name)).toContain('whoami')
    expect(await call(secured.client, 'echo', { text: 'through the bridge' })).toBe('through the bridge')
    await secured.client.close()
    expect(as.tokenPosts('refresh_token').length).toBe(refreshesBefore + 1)
    // the rotated tokens were saved, so the next start uses them
    expect(await readFile(join(dataDir, 'mcp-secrets.json'), 'utf8')).not.toBe(secretsBefore)
    expect(secured.stderr()).not.toMatch(/error|Error/)
  }, 180_000)

  it('refuses to launch an unknown server, or a remote one without a login, in one line naming the fix', async () => {
    const unknown = await cli(['run', 'nope'])
    expect(unknown).toMatchObject({ code: 1, stdout: '' })
    expect(unknown.stderr).toBe("syncscope mcp: unknown_server: no MCP server named 'nope'\n")
    const logout = new McpHost({
      workspace,
      settingsFile: join(dataDir, 'settings.json'),
      secretStore: fileSecretStore(join(dataDir, 'mcp-secrets.json'))
    })
    await logout.start()
    await logout.registry.logout('secured')
    await logout.close()
    const loggedOut = await cli(['run', 'secured'])
    expect(loggedOut).toMatchObject({ code: 1, stdout: '' })
    expect(loggedOut.stderr).toContain(
      'secured needs a login: use "Log in" on the MCP page or run `syncscope mcp login secured`'
    )
  }, 180_000)
})
