import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMcpHttpServer, type RunningMcpHttpServer } from './support/mcp-http-server'
import { runMcpCli } from './support/run-cli'

// `syncscope mcp list` beside an HTTP server that accepts the connection and never answers (its timeout is the
// default 30 s): the list comes within a few seconds, that server shown as still connecting.

let dir: string
let hung: Server
const sockets: Socket[] = []
let working: RunningMcpHttpServer

const list = (args: string[] = []) =>
  runMcpCli(['list', ...args, '--config', join(dir, 'mcp.json'), '--data-dir', join(dir, 'data')], { cwd: dir })

describe('syncscope mcp list with a server that never answers (a subprocess)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-list-hung-'))
    hung = createServer((socket) => void sockets.push(socket))
    await new Promise<void>((done) => hung.listen(0, '127.0.0.1', () => done()))
    working = await startMcpHttpServer({ kind: 'none' })
    await writeFile(
      join(dir, 'mcp.json'),
      JSON.stringify({
        servers: {
          hung: {
            transport: 'http',
            url: `http://127.0.0.1:${(hung.address() as AddressInfo).port}/mcp`,
            auth: { mode: 'none' }
          },
          working: { transport: 'http', url: working.url, auth: { mode: 'none' } }
        }
      })
    )
  })
  afterAll(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((done) => hung.close(done))
    await working?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('answers within a few seconds, the silent server still connecting and the other connected', async () => {
    const run = await list(['--json'])
    expect(run.code).toBe(0)
    // the silent server's own timeout is 30 s: the list did not wait for it
    expect(run.ms).toBeLessThan(10_000)
    const entries = JSON.parse(run.stdout) as Array<{ name: string; state: string }>
    expect(entries.map(({ name, state }) => ({ name, state }))).toEqual([
      { name: 'hung', state: 'connecting' },
      { name: 'working', state: 'connected' }
    ])
  })

  it('says so in the text listing', async () => {
    const run = await list()
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^hung\s+http\s+connecting\s+file/m)
    expect(run.stderr).toContain('hung: no answer yet (still connecting after')
  })
})
