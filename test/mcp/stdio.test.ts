import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { McpServerConfig } from '../../src/shared/contract/mcp'
import { Registry } from '../../src/main/mcp/registry'
import { loginPath } from '../../src/main/mcp/login-path'
import { McpFailure } from '../../src/main/mcp/errors'
import { isAlive, textOf, waitFor } from './support/processes'

const EVERYTHING = resolve(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js')
const FIXTURE = resolve(__dirname, 'support/stdio-fixture.mjs')

const everything: McpServerConfig = {
  name: 'everything',
  transport: 'stdio',
  command: process.execPath,
  args: [EVERYTHING, 'stdio']
}

let registry: Registry
let workspace: string
let spawnedPids: number[]

beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'syncscope-mcp-stdio-'))
  registry = new Registry({
    workspaceRoot: workspace,
    restartPolicy: { baseDelayMs: 50, maxDelayMs: 200, maxCrashes: 3, windowMs: 30_000 }
  })
  spawnedPids = []
})

afterEach(async () => {
  await registry.close()
  for (const pid of spawnedPids) if (await isAlive(pid)) process.kill(pid, 'SIGKILL')
  await rm(workspace, { recursive: true, force: true })
})

function pidOf(name: string): number {
  const pid = registry.describe(name).pid
  if (pid === null) throw new Error(`${name} has no process`)
  spawnedPids.push(pid)
  return pid
}

describe('stdio servers (server-everything and a fixture, as real subprocesses)', () => {
  it('spawns lazily on first use, once even for concurrent first calls, and calls tools under mcp__<name>__<tool>', async () => {
    const log = join(workspace, 'fixture.log')
    await registry.addServer({
      name: 'fx',
      transport: 'stdio',
      command: process.execPath,
      args: [FIXTURE],
      env: { FIXTURE_LOG: log }
    })
    expect(registry.describe('fx')).toMatchObject({ state: 'idle', pid: null })
    await expect(readFile(log, 'utf8')).rejects.toThrow(/ENOENT/)
    const results = await Promise.all(['A', 'B', 'C'].map((name) => registry.callTool('fx', 'env', { name })))
    expect(results.map(textOf)).toEqual(['<unset>', '<unset>', '<unset>'])
    expect((await readFile(log, 'utf8')).match(/^started/gm)).toHaveLength(1)
    pidOf('fx')

    const added = await registry.addServer(everything)
    expect(added).toMatchObject({ state: 'idle', pid: null, transport: 'stdio' })
    const tools = await registry.tools('everything')
    expect(tools.map((tool) => tool.name)).toContain('mcp__everything__echo')
    const pid = pidOf('everything')
    const [a, b] = await Promise.all([
      registry.callTool('everything', 'echo', { message: 'one' }),
      registry.callPrefixed('mcp__everything__get-sum', { a: 2, b: 3 })
    ])
    expect(textOf(a)).toContain('one')
    expect(textOf(b)).toContain('5')
    expect(registry.describe('everything')).toMatchObject({ state: 'connected', pid, toolCount: tools.length })
  })

  it('keeps the process for an identical re-apply and replaces it when args or env change', async () => {
    const config: McpServerConfig = {
      name: 'fx',
      transport: 'stdio',
      command: process.execPath,
      args: [FIXTURE],
      env: { GREETING: 'hi' }
    }
    await registry.applyConfig({ servers: [config] })
    await registry.callTool('fx', 'env', { name: 'GREETING' })
    const first = pidOf('fx')
    await registry.applyConfig({ servers: [{ ...config }] })
    expect(registry.describe('fx').pid).toBe(first)
    await registry.applyConfig({ servers: [{ ...config, env: { GREETING: 'hello' } }] })
    expect(textOf(await registry.callTool('fx', 'env', { name: 'GREETING' }))).toBe('hello')
    const second = pidOf('fx')
    expect(second).not.toBe(first)
    await waitFor('the old process to exit', async () => !(await isAlive(first)))
    await registry.applyConfig({ servers: [] })
    expect(registry.list()).toEqual([])
    await waitFor('the process to exit after removal', async () => !(await isAlive(second)))
  })

  it('passes env over the login shell’s PATH (and nothing else of ours), expands ${workspaceRoot} in args and runs in the workspace', async () => {
    process.env.SYNCSCOPE_PARENT_ONLY = 'must not leak'
    await registry.addServer({
      name: 'fx',
      transport: 'stdio',
      command: 'node',
      args: [FIXTURE, '--root=${workspaceRoot}'],
      env: { ONLY_HERE: 'yes' }
    })
    expect(textOf(await registry.callTool('fx', 'env', { name: 'ONLY_HERE' }))).toBe('yes')
    expect(textOf(await registry.callTool('fx', 'env', { name: 'SYNCSCOPE_PARENT_ONLY' }))).toBe('<unset>')
    delete process.env.SYNCSCOPE_PARENT_ONLY
    // the login shell's PATH (read once per process; the current one where the shell does not answer)
    expect(textOf(await registry.callTool('fx', 'env', { name: 'PATH' }))).toBe((await loginPath()).path)
    const where = JSON.parse(textOf(await registry.callTool('fx', 'where'))) as { cwd: string; argv: string[] }
    expect(where).toEqual({ cwd: workspace, argv: [`--root=${workspace}`] })
    pidOf('fx')
  })

  it('restarts a killed process with a new pid and keeps serving calls', async () => {
    await registry.addServer(everything)
    await registry.callTool('everything', 'echo', { message: 'before' })
    const first = pidOf('everything')
    process.kill(first, 'SIGKILL')
    const second = await waitFor('a restarted process', () => {
      const entry = registry.describe('everything')
      return entry.state === 'connected' && entry.pid !== first && entry.pid
    })
    spawnedPids.push(second as number)
    expect(registry.describe('everything').restarts).toBe(1)
    expect(textOf(await registry.callTool('everything', 'echo', { message: 'after' }))).toContain('after')
  })

  it('turns a crash loop into an error naming stderr, cleared by reconnect', async () => {
    const log = join(workspace, 'fixture.log')
    await registry.addServer({
      name: 'flaky',
      transport: 'stdio',
      command: process.execPath,
      args: [FIXTURE],
      env: { FIXTURE_LOG: log }
    })
    for (let crash = 0; crash < 3; crash += 1) {
      await waitFor(
        'a running process',
        () =>
          registry.describe('flaky').state === 'connected' ||
          registry.callTool('flaky', 'env', { name: 'X' }).then(
            () => true,
            () => false
          )
      )
      await registry.callTool('flaky', 'crash').catch(() => {})
      await waitFor('the crash to be noticed', () => registry.describe('flaky').state !== 'connected')
    }
    const entry = await waitFor(
      'the crash loop',
      () => registry.describe('flaky').error?.code === 'crash_loop' && registry.describe('flaky')
    )
    expect(entry.state).toBe('error')
    expect(entry.error?.message).toMatch(/crashed 3 times/)
    await expect(registry.callTool('flaky', 'env', { name: 'X' })).rejects.toMatchObject({ code: 'crash_loop' })
    expect((await readFile(log, 'utf8')).match(/^started/gm)).toHaveLength(3)
    const reconnected = await registry.reconnect('flaky')
    expect(reconnected.state).toBe('connected')
    pidOf('flaky')
  })

  it('reports a process that cannot start, with its stderr', async () => {
    await registry.addServer({
      name: 'broken',
      transport: 'stdio',
      command: process.execPath,
      args: [FIXTURE],
      env: { FIXTURE_CRASH_ON_START: '1' }
    })
    const failure = await registry.tools('broken').catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(McpFailure)
    expect(registry.describe('broken')).toMatchObject({
      state: 'error',
      error: { code: 'transport_error', stderr: ['fixture: refusing to start'] }
    })
  })

  it('times a slow call out after timeoutMs, naming server and tool, and cancels it on the server', async () => {
    const log = join(workspace, 'fixture.log')
    await registry.addServer({
      name: 'slow',
      transport: 'stdio',
      command: process.execPath,
      args: [FIXTURE],
      env: { FIXTURE_LOG: log },
      timeoutMs: 60_000
    })
    const started = Date.now()
    const failure = await registry
      .callTool('slow', 'sleep', { ms: 60_000 }, { timeoutMs: 300 })
      .catch((error: unknown) => error)
    // the call's 300 ms, not the server's 60 s (nor the tool's): room for a loaded machine between the two
    expect(Date.now() - started).toBeLessThan(30_000)
    expect(failure).toMatchObject({
      code: 'timeout',
      message: 'mcp__slow__sleep timed out after 300 ms (server slow, tool sleep)'
    })
    await waitFor('the server to see notifications/cancelled', async () =>
      (await readFile(log, 'utf8')).includes('cancelled sleep 60000')
    )
    expect(textOf(await registry.callTool('slow', 'sleep', { ms: 10 }))).toBe('slept 10')
    pidOf('slow')
  })

  it('times out a real third-party long-running tool (server-everything) with the per-call timeout', async () => {
    await registry.addServer(everything)
    await expect(
      registry.callTool('everything', 'trigger-long-running-operation', { duration: 5, steps: 5 }, { timeoutMs: 400 })
    ).rejects.toMatchObject({ code: 'timeout' })
    pidOf('everything')
  })

  it('serves extraMcpServers below the config files: a file entry of the same name wins', async () => {
    await registry.close()
    registry = new Registry({
      workspaceRoot: workspace,
      extraMcpServers: [
        { ...everything, name: 'extra' },
        { name: 'fx', transport: 'stdio', command: process.execPath, args: [FIXTURE], env: { WHO: 'extra' } }
      ]
    })
    await registry.applyConfig({
      servers: [{ name: 'fx', transport: 'stdio', command: process.execPath, args: [FIXTURE], env: { WHO: 'file' } }]
    })
    expect(registry.list().map((entry) => [entry.name, entry.source])).toEqual([
      ['fx', 'programmatic'],
      ['extra', 'extra']
    ])
    expect(textOf(await registry.callTool('fx', 'env', { name: 'WHO' }))).toBe('file')
    pidOf('fx')
  })

  it('lists a disabled server as disabled and never starts it', async () => {
    const log = join(workspace, 'fixture.log')
    const entry = await registry.addServer({
      name: 'off',
      transport: 'stdio',
      command: process.execPath,
      args: [FIXTURE],
      env: { FIXTURE_LOG: log },
      disabled: true
    })
    expect(entry).toMatchObject({ state: 'disabled', pid: null })
    await expect(registry.callTool('off', 'env', { name: 'X' })).rejects.toThrow(/off is disabled/)
    await expect(readFile(log, 'utf8')).rejects.toThrow(/ENOENT/)
  })

  it('answers unknown servers and tools with structured errors', async () => {
    await expect(registry.callTool('nope', 'x')).rejects.toMatchObject({ code: 'unknown_server' })
    await registry.addServer(everything)
    await registry.tools('everything')
    pidOf('everything')
    await expect(registry.callTool('everything', 'no-such-tool')).rejects.toMatchObject({ code: 'tool_not_found' })
  })
})
