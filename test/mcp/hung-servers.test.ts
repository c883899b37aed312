import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { processesNaming } from './support/proc'
import { runMcpCli } from './support/run-cli'

const FIXTURE = resolve(__dirname, 'support/stdio-fixture.mjs')

let dir: string
let config: string
let quickConfig: string
let mute: string
let hung: Server
const sockets: Socket[] = []

const cli = (args: string[], configFile = config) =>
  runMcpCli([...args, '--config', configFile, '--data-dir', join(dir, 'data'), '--workspace', dir])

describe('a hung or broken server beside a working one (CLI as a subprocess)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-mcp-hung-'))
    hung = createServer((socket) => void sockets.push(socket))
    await new Promise<void>((done) => hung.listen(0, '127.0.0.1', () => done()))
    // never answers initialize, ignores the end of stdin and SIGTERM: only SIGKILL ends it
    mute = join(dir, 'mute-server.mjs')
    await writeFile(mute, "process.on('SIGTERM', () => {})\nprocess.stdin.resume()\nsetInterval(() => {}, 1000)\n")
    const servers = (hungTimeoutMs: number) => ({
      servers: {
        hung: {
          transport: 'http',
          url: `http://127.0.0.1:${(hung.address() as AddressInfo).port}/mcp`,
          auth: { mode: 'none' },
          timeoutMs: hungTimeoutMs
        },
        mute: { transport: 'stdio', command: process.execPath, args: [mute], timeoutMs: 1_000 },
        fx: { transport: 'stdio', command: process.execPath, args: [FIXTURE] }
      }
    })
    // a hung server that would hold a command for ten minutes if anything waited on it
    config = join(dir, 'mcp.json')
    await writeFile(config, JSON.stringify(servers(600_000)))
    quickConfig = join(dir, 'quick.json')
    await writeFile(quickConfig, JSON.stringify(servers(1_500)))
  })
  afterAll(async () => {
    for (const pid of await processesNaming(mute)) process.kill(pid, 'SIGKILL')
    for (const socket of sockets) socket.destroy()
    await new Promise((done) => hung.close(done))
    await rm(dir, { recursive: true, force: true })
  })

  it('answers for the working server without waiting on the hung HTTP server (whose timeout is ten minutes)', async () => {
    const run = await cli(['tools', 'fx'])
    expect(run.stderr).toBe('')
    expect(run.stdout).toContain('mcp__fx__env')
    expect(run.code).toBe(0)
    // finishing inside the test's own timeout shows that nothing waited on the hung server
    expect(run.ms).toBeLessThan(60_000)
  }, 120_000)

  it('lists every server in parallel, each within its own timeout, the hung one with a timeout error', async () => {
    const run = await cli(['list', '--json'], quickConfig)
    const entries = JSON.parse(run.stdout) as Array<{
      name: string
      state: string
      error?: { code: string; message: string }
    }>
    expect(entries.find((entry) => entry.name === 'fx')?.state).toBe('idle')
    expect(entries.find((entry) => entry.name === 'hung')).toMatchObject({
      state: 'error',
      error: { code: 'timeout', message: expect.stringContaining('did not answer initialize within 1500 ms') }
    })
  }, 120_000)

  it('a stdio server that never answers initialize times out clearly and leaves no process behind, call after call', async () => {
    for (let call = 0; call < 2; call++) {
      const run = await cli(['tools', 'mute'])
      expect(run.code).toBe(1)
      expect(await processesNaming(mute)).toEqual([])
      expect(run.stderr).toContain('syncscope mcp: timeout: mute did not answer initialize within 1000 ms')
    }
  }, 180_000)
})
