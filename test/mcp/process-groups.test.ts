import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { McpHost } from '../../src/main/mcp/host'
import { fileSecretStore } from '../../src/main/mcp/persistence/secret-store'
import { Registry } from '../../src/main/mcp/registry'
import { groupMembers, processesNaming, processesWithArg } from './support/proc'
import { textOf, waitFor } from './support/processes'

// A stdio server started through `npx` or `sh -c` is a grandchild of ours: ending only our child leaves it running.

const ROOT = resolve(__dirname, '../..')
const FIXTURE = resolve(__dirname, 'support/stdio-fixture.mjs')
let dir: string
let mute: string
let registry: Registry | null = null

/** `sh -c` that stays the parent (no exec of the last command), as npx does: the server is our grandchild. */
const viaShell = (script: string, marker: string) => ['-c', `"${process.execPath}" "${script}" ${marker}; exit 0`]

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-pgroup-'))
  // never answers initialize, ignores the end of stdin and SIGTERM
  mute = join(dir, 'mute.mjs')
  await writeFile(mute, "process.on('SIGTERM', () => {})\nprocess.stdin.resume()\nsetInterval(() => {}, 1000)\n")
})
afterEach(async () => {
  await registry?.close()
  registry = null
})
afterAll(async () => {
  for (const pid of [...(await processesNaming(dir)), ...(await processesNaming('pgroup-marker-'))])
    process.kill(pid, 'SIGKILL')
  await rm(dir, { recursive: true, force: true })
})

describe('stdio servers run in their own process group, ended as a whole', () => {
  it('removing the server ends its grandchild too (sh -c → node), even one that outlives its stdin', async () => {
    const marker = 'pgroup-marker-remove'
    registry = new Registry()
    await registry.addServer({
      name: 'shell',
      transport: 'stdio',
      command: '/bin/sh',
      args: viaShell(FIXTURE, marker),
      env: { FIXTURE_LINGER: '1' }
    })
    expect(JSON.parse(textOf(await registry.callTool('shell', 'where'))).argv).toEqual([marker])
    const leader = registry.describe('shell').pid!
    const grandchild = await processesWithArg(marker)
    expect(grandchild).toHaveLength(1)
    expect(await groupMembers(leader)).toEqual(expect.arrayContaining([leader, ...grandchild]))
    await registry.remove('shell')
    expect(await processesNaming(marker)).toEqual([])
    expect(await groupMembers(leader)).toEqual([])
  }, 60_000)

  it('a server behind sh -c that never answers initialize (and ignores SIGTERM) times out and leaves no process of its group', async () => {
    const marker = 'pgroup-marker-mute'
    registry = new Registry()
    await registry.addServer({
      name: 'silent',
      transport: 'stdio',
      command: '/bin/sh',
      args: viaShell(mute, marker),
      timeoutMs: 1_000
    })
    await expect(registry.tools('silent')).rejects.toMatchObject({ code: 'timeout' })
    expect(await processesNaming(marker)).toEqual([])
  }, 60_000)

  it('the app exiting without closing the registry ends the groups of its servers', async () => {
    const marker = 'pgroup-marker-exit'
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(__dirname, 'support/exit-without-close.ts'), '/bin/sh', ...viaShell(FIXTURE, marker)],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] }
    )
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    const code = await new Promise<number | null>((done) => child.once('close', done))
    expect(code).toBe(0)
    const leader = Number(stdout.trim())
    expect(leader).toBeGreaterThan(0)
    await waitFor(
      'the group to be gone',
      async () => (await groupMembers(leader)).length === 0 && (await processesNaming(marker)).length === 0,
      5_000
    )
  }, 60_000)

  it('`syncscope mcp run`: when the host closes stdin, the server and its grandchild are gone', async () => {
    const marker = 'pgroup-marker-launcher'
    const dataDir = join(dir, 'data')
    const host = new McpHost({
      workspace: dir,
      settingsFile: join(dataDir, 'settings.json'),
      secretStore: fileSecretStore(join(dataDir, 'mcp-secrets.json'))
    })
    await host.start()
    await host.save('wrapped', {
      transport: 'stdio',
      command: '/bin/sh',
      args: viaShell(FIXTURE, marker),
      env: { FIXTURE_LINGER: '1' }
    })
    await host.close()
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(ROOT, 'bin/syncscope.js'), 'mcp', 'run', 'wrapped', '--data-dir', dataDir, '--workspace', dir],
      env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/syncscope-test-bus' } as Record<
        string,
        string
      >,
      stderr: 'pipe'
    })
    const client = new Client({ name: 'a-host', version: '1.0.0' })
    await client.connect(transport, { timeout: 40_000 })
    expect(JSON.parse(textOf((await client.callTool({ name: 'where' })) as { content?: unknown })).argv).toEqual([
      marker
    ])
    expect(await processesWithArg(marker)).toHaveLength(1)
    const launcher = transport.pid!
    await client.close()
    await waitFor(
      'the launcher and its server group to be gone',
      async () => (await processesNaming(marker)).length === 0 && (await groupMembers(launcher)).length === 0,
      10_000
    )
  }, 90_000)
})
