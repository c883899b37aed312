import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAsHost } from './support/host-client'
import { startMcpHttpServer, type RunningMcpHttpServer } from './support/mcp-http-server'
import { waitFor } from './support/processes'
import { runMcpCli } from './support/run-cli'

const ROOT = resolve(__dirname, '../..')
const FIXTURE = resolve(__dirname, 'support/many-tools-fixture.mjs')

let dir: string
let dataDir: string
let workspace: string
let cleanHome: string
let callLog: string
let remote: RunningMcpHttpServer

const cli = (args: string[]) => runMcpCli([...args, '--data-dir', dataDir, '--workspace', workspace])

/** What `mcp export` wrote for a server: the launcher, as the host will start it. */
async function exportedEntry(server: string): Promise<{ command: string; args: string[] }> {
  const file = join(dir, 'claude_desktop_config.json')
  const written = await cli(['export', '--to', 'claude-desktop', '--file', file, '--yes'])
  expect(written.code).toBe(0)
  const entries = (
    JSON.parse(await readFile(file, 'utf8')) as { mcpServers: Record<string, { command: string; args: string[] }> }
  ).mcpServers
  return entries[server]!
}

const names = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name)

describe('syncscope mcp run enforces the tool filter for a host (env -i, clean HOME, stdio, the SDK client)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-launcher-filter-'))
    dataDir = join(dir, 'data')
    workspace = join(dir, 'workspace')
    cleanHome = join(dir, 'clean-home')
    callLog = join(dir, 'calls.log')
    await Promise.all([mkdir(dataDir, { recursive: true }), mkdir(workspace), mkdir(cleanHome)])
    remote = await startMcpHttpServer({ kind: 'none' })
    const settings = {
      mcp: {
        servers: {
          many: {
            transport: 'stdio',
            command: process.execPath,
            args: [FIXTURE],
            env: { FIXTURE_LOG: callLog },
            tools: { allow: ['read_*', 'tool_00?', 'grow', 'delete_everything'], deny: ['delete_*'] }
          },
          remote: { transport: 'http', url: remote.url, auth: { mode: 'none' }, tools: { deny: ['whoami'] } }
        }
      }
    }
    await writeFile(join(dataDir, 'settings.json'), JSON.stringify(settings, null, 2))
  })
  afterAll(async () => {
    await remote?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('cuts a 100-tool stdio server to the allowed tools, refuses a denied tool called by name, and keeps the filter after list_changed', async () => {
    const entry = await exportedEntry('many')
    expect(entry.args.slice(0, 4)).toEqual([join(ROOT, 'bin/syncscope.js'), 'mcp', 'run', 'many'])
    const host = await startAsHost(entry, cleanHome)
    const { client } = host
    const changed = new Promise<void>((done) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => done())
    )
    // 104 tools on the server; the host sees the allowed ones minus the denied: deny wins over allow
    expect(await names(client)).toEqual([
      'tool_001',
      'tool_002',
      'tool_003',
      'tool_004',
      'tool_005',
      'tool_006',
      'tool_007',
      'tool_008',
      'tool_009',
      'read_file',
      'grow'
    ])
    expect((await client.callTool({ name: 'read_file', arguments: {} })).content).toEqual([
      { type: 'text', text: 'read_file done' }
    ])

    // asked for by name although never listed: refused by the launcher with a JSON-RPC error, never sent on
    for (const hidden of ['delete_everything', 'write_file', 'tool_100']) {
      const refused = await client.callTool({ name: hidden, arguments: {} }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(McpError)
      expect(refused).toMatchObject({ code: ErrorCode.InvalidParams })
      expect((refused as McpError).message).toContain(`Unknown tool: ${hidden}`)
    }

    // the server adds read_more and delete_more and says so: the host lists again and the filter still holds
    await client.callTool({ name: 'grow', arguments: {} })
    await changed
    const grown = await names(client)
    expect(grown).toContain('read_more')
    expect(grown).not.toContain('delete_more')
    expect(grown).toHaveLength(12)
    const late = await client.callTool({ name: 'delete_more', arguments: {} }).catch((error: unknown) => error)
    expect(late).toMatchObject({ code: ErrorCode.InvalidParams })
    await client.close()

    const calls = (await readFile(callLog, 'utf8')).trim().split('\n')
    expect(calls).toEqual(['called read_file', 'called grow'])
    expect(host.stderr()).not.toMatch(/error|Error/)
  }, 120_000)

  it('filters a remote server bridged over streamable HTTP the same way', async () => {
    const host = await startAsHost(await exportedEntry('remote'), cleanHome)
    expect(await names(host.client)).toEqual(['echo'])
    const refused = await host.client.callTool({ name: 'whoami', arguments: {} }).catch((error: unknown) => error)
    expect(refused).toMatchObject({ code: ErrorCode.InvalidParams })
    expect((await host.client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content).toEqual([
      { type: 'text', text: 'hi' }
    ])
    await host.client.close()
  }, 120_000)

  it('a host that sends a batch or a malformed line gets nothing past the gate', async () => {
    const { client, transport, stderr } = await startAsHost(await exportedEntry('many'), cleanHome)
    const before = (await readFile(callLog, 'utf8')).length
    // the SDK's transport writes what it is given: a JSON-RPC batch holding a call of a denied tool
    const batch = [
      { jsonrpc: '2.0', id: 901, method: 'tools/call', params: { name: 'delete_everything', arguments: {} } }
    ]
    await (transport as unknown as { send(message: unknown): Promise<void> }).send(batch)
    await waitFor('the launcher to log the dropped line', () => stderr().includes('dropped'))
    expect(await names(client)).toContain('read_file')
    await client.close()
    expect((await readFile(callLog, 'utf8')).length).toBe(before)
  }, 120_000)
})
