import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authorizeInBrowser, startAuthServer, type RunningAuthServer } from './support/oauth-server'
import { startMcpHttpServer, type RunningMcpHttpServer } from './support/mcp-http-server'

const ROOT = resolve(__dirname, '../..')
const FIXTURE = resolve(__dirname, 'support/stdio-fixture.mjs')

interface CliRun {
  code: number | null
  stdout: string
  stderr: string
}

let dir: string
let config: string

/** Runs `syncscope mcp …` as a person would; no keychain on this bus, so secrets go to the data folder's 0600 file. */
function cli(args: string[], onStderr?: (text: string) => void): Promise<CliRun> {
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'bin/syncscope.js'), 'mcp', ...args, '--data-dir', join(dir, 'data'), '--workspace', dir],
      {
        cwd: dir,
        env: {
          ...process.env,
          DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/syncscope-cli-bus',
          FIXTURE_VALUE: 'from-env'
        },
        stdio: ['ignore', 'pipe', 'pipe']
      }
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      onStderr?.(stderr)
    })
    child.once('close', (code) => done({ code, stdout, stderr }))
  })
}

describe('syncscope mcp (the CLI, as a subprocess)', () => {
  let as: RunningAuthServer
  let rs: RunningMcpHttpServer
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-mcp-cli-'))
    let issuer = ''
    rs = await startMcpHttpServer({ kind: 'oauth', issuer: () => issuer })
    as = await startAuthServer({ resource: rs.url })
    issuer = as.issuer
    config = join(dir, 'claude_desktop_config.json')
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: {
          fx: { command: process.execPath, args: [FIXTURE], env: { FROM_CONFIG: '${FIXTURE_VALUE}' } },
          secured: { type: 'http', url: rs.url },
          broken: { command: '' }
        }
      })
    )
    await writeFile(
      join(dir, 'mcp.json'),
      JSON.stringify({ servers: { secured: { transport: 'http', url: rs.url, auth: { mode: 'authorizationCode' } } } })
    )
  })
  afterAll(async () => {
    await as?.stop()
    await rs?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('lists a --config file (Claude Desktop format) as JSON with states and error objects', async () => {
    const run = await cli(['list', '--config', config, '--json'])
    expect(run.code).toBe(1)
    const entries = JSON.parse(run.stdout) as Array<{
      name: string
      state: string
      transport: string
      error?: { code: string; message: string }
    }>
    expect(entries.map(({ name, state, transport }) => ({ name, state, transport }))).toEqual([
      { name: 'fx', state: 'idle', transport: 'stdio' },
      { name: 'secured', state: 'error', transport: 'http' },
      { name: 'broken', state: 'error', transport: 'stdio' }
    ])
    expect(entries[2]?.error).toMatchObject({
      code: 'invalid_config',
      message: 'mcpServers.broken.command: command is empty'
    })
  })

  it('fails a list of an invalid config, naming each bad entry and each unreadable file', async () => {
    const text = await cli(['list', '--config', config])
    expect(text.code).toBe(1)
    expect(text.stdout).toContain('invalid_config: mcpServers.broken.command: command is empty')
    expect(text.stderr).toContain('1 invalid entry')
    expect(text.stderr).toMatch(/^secrets: .+/m)
    const notJson = join(dir, 'not-json.json')
    await writeFile(notJson, '{nope')
    const broken = await cli(['list', '--config', notJson])
    expect(broken.code).toBe(1)
    expect(broken.stderr).toContain(`${notJson} is not valid JSON`)
  })

  it('lists tools and calls one, with --args and a timeout error naming server and tool', async () => {
    const tools = await cli(['tools', 'fx', '--config', config])
    expect(tools.stdout).toContain('mcp__fx__env  Reads an environment variable')
    const called = await cli(['call', 'fx', 'env', '--args', '{"name":"FROM_CONFIG"}', '--config', config])
    expect(called).toMatchObject({ code: 0, stdout: 'from-env\n' })
    const slow = await cli(['call', 'fx', 'sleep', '--args', '{"ms":3000}', '--timeout', '200', '--config', config])
    expect(slow.code).toBe(1)
    expect(slow.stderr).toContain(
      'syncscope mcp: timeout: mcp__fx__sleep timed out after 200 ms (server fx, tool sleep)'
    )
    const bad = await cli(['call', 'fx', 'env', '--args', '{nope', '--config', config])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--args is not valid JSON')
  })

  it('logs in through the browser, stores the tokens, and later calls use them', async () => {
    // the workspace mcp.json is the person's own: approved as it is
    expect((await cli(['trust', '--yes'])).code).toBe(0)
    const before = await cli(['list', '--json'])
    expect(before.code).toBe(0)
    expect(JSON.parse(before.stdout)).toEqual([
      expect.objectContaining({ name: 'secured', state: 'needs-login', source: 'workspace' })
    ])
    let browsing: Promise<void> | null = null
    const login = await cli(['login', 'secured', '--no-open'], (stderr) => {
      const url = /^\s+(http:\/\/\S+\/auth\?\S+)$/m.exec(stderr)?.[1]
      if (url && !browsing) browsing = authorizeInBrowser(url).then(async (callback) => void (await fetch(callback)))
    })
    await browsing
    expect(login.code).toBe(0)
    expect(login.stdout).toMatch(/secured is connected; tokens stored in .*mcp-secrets\.json \(mode 0600\)/)
    const called = await cli(['call', 'secured', 'echo', '--args', '{"text":"from the cli"}'])
    expect(called).toMatchObject({ code: 0, stdout: 'from the cli\n' })
    expect(as.requests.filter((request) => request.path === '/auth').length).toBe(1)
  })

  it('explains usage errors', async () => {
    expect((await cli(['--help'])).code).toBe(0)
    const unknown = await cli(['frobnicate', 'x'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown mcp command 'frobnicate'")
    const missing = await cli(['tools'])
    expect(missing.stderr).toContain('missing the server name')
  })
})
