import { spawn } from 'node:child_process'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readLoginPath } from '../../src/main/mcp/login-path'
import { processesWithArg } from './support/proc'
import { textOf } from './support/processes'

// A desktop app started from the dock gets a minimal PATH: `npx` and friends live where the login shell's rc files
// put them. Processes here start the way such an app does: `env -i PATH=/usr/bin` with a HOME of our own.

const ROOT = resolve(__dirname, '../..')
const FIXTURE = resolve(__dirname, 'support/stdio-fixture.mjs')
let home: string
let config: string
let toolsDir: string

function dockEnv(shell = '/bin/bash'): string[] {
  return ['-i', 'PATH=/usr/bin', `HOME=${home}`, `SHELL=${shell}`]
}

function runCli(args: string[], shell?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(
      '/usr/bin/env',
      [
        ...dockEnv(shell),
        process.execPath,
        join(ROOT, 'bin/syncscope.js'),
        'mcp',
        ...args,
        '--config',
        config,
        '--data-dir',
        join(home, 'data')
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] }
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('close', (code) => done({ code, stdout, stderr }))
  })
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'syncscope-login-path-'))
  toolsDir = join(home, 'tools', 'bin')
  await mkdir(toolsDir, { recursive: true })
  // what nvm or Homebrew do: the login shell's profile puts a folder on PATH (and prints something, as rc files do)
  await writeFile(join(home, '.bash_profile'), 'echo "welcome to the test home"\nexport PATH="$HOME/tools/bin:$PATH"\n')
  const server = join(toolsDir, 'fake-mcp-server')
  await writeFile(server, `#!/bin/sh\nexec "${process.execPath}" "${FIXTURE}" "$@"\n`)
  await chmod(server, 0o755)
  config = join(home, 'mcp.json')
  await writeFile(config, JSON.stringify({ servers: { fx: { transport: 'stdio', command: 'fake-mcp-server' } } }))
})
afterAll(() => rm(home, { recursive: true, force: true }))

describe("stdio servers start with the login shell's PATH", () => {
  it('`mcp call` started with PATH=/usr/bin finds a server only the login profile puts on PATH', async () => {
    const run = await runCli(['call', 'fx', 'env', '--args', '{"name":"PATH"}'])
    expect(run.stderr).toBe('')
    expect(run.stdout.startsWith(`${toolsDir}:`)).toBe(true)
    expect(run.stdout).not.toContain('welcome')
    expect(run.code).toBe(0)
  }, 90_000)

  it('`mcp run` (what other hosts start) does the same', async () => {
    const transport = new StdioClientTransport({
      command: '/usr/bin/env',
      args: [
        ...dockEnv(),
        process.execPath,
        join(ROOT, 'bin/syncscope.js'),
        'mcp',
        'run',
        'fx',
        '--config',
        config,
        '--data-dir',
        join(home, 'data')
      ],
      stderr: 'pipe'
    })
    const client = new Client({ name: 'a-host', version: '1.0.0' })
    await client.connect(transport, { timeout: 60_000 })
    expect(
      textOf((await client.callTool({ name: 'env', arguments: { name: 'PATH' } })) as { content?: unknown }).startsWith(
        `${toolsDir}:`
      )
    ).toBe(true)
    await client.close()
  }, 90_000)

  it('a shell that prints nothing leaves the current PATH with a warning, which the launcher logs', async () => {
    const read = await readLoginPath({ PATH: '/usr/bin', HOME: home, SHELL: '/bin/false' })
    expect(read).toEqual({
      path: '/usr/bin',
      warning:
        "the login shell's PATH is unknown (/bin/false -ilc exited with 1 without printing it); servers start with the app's PATH /usr/bin"
    })
    const run = await runCli(['run', 'fx'], '/bin/false')
    expect(run.stderr).toContain(
      "syncscope mcp run: the login shell's PATH is unknown (/bin/false -ilc exited with 1 without printing it)"
    )
    expect(run.stderr).toContain('cannot start `fake-mcp-server`: spawn fake-mcp-server ENOENT')
  }, 90_000)

  it('a shell that hangs is given up after the timeout, and ended with what it started', async () => {
    const marker = join(home, 'hanging-shell')
    await writeFile(marker, `#!/bin/sh\nsleep 30 &\nwait\n`)
    await chmod(marker, 0o755)
    const read = await readLoginPath({ PATH: '/usr/bin', HOME: home, SHELL: marker }, 300)
    expect(read.warning).toContain(`${marker} -ilc did not answer within 300 ms`)
    expect(read.path).toBe('/usr/bin')
    expect(await processesWithArg(marker)).toEqual([])
  }, 30_000)
})
