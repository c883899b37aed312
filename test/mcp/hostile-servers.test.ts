import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { MAX_MCP_MESSAGE_BYTES } from '../../src/main/mcp/connection/message-size'
import { Registry } from '../../src/main/mcp/registry'

// MCP servers are other people's programs: a message without end, or a tool list without end, must be refused with
// its cause, never held. Each hostile server is real (a process, an HTTP server, an SDK server).

const ENDLESS_TOOLS = resolve(__dirname, 'support/endless-tools-fixture.mjs')
const MIB = 1024 * 1024
/** Writes `total` bytes of `piece`, a MiB at a time, each after the last was taken. */
async function writeMib(res: ServerResponse, piece: string, total: number): Promise<void> {
  const chunk = piece.repeat(MIB / piece.length)
  for (let sent = 0; sent < total && !res.destroyed; sent += MIB)
    if (!res.write(chunk)) await new Promise((done) => res.once('drain', done))
}

/** An HTTP "MCP server" whose every answer is one message past the cap: a JSON body, or one SSE event. */
async function oversizedHttpServer(kind: 'json' | 'sse'): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume()
    if (req.method !== 'POST') return void res.writeHead(405).end()
    res.writeHead(200, { 'content-type': kind === 'json' ? 'application/json' : 'text/event-stream' })
    if (kind === 'sse') res.write('event: message\ndata: {"jsonrpc":"2.0","id":0,"result":"')
    else res.write('{"jsonrpc":"2.0","id":0,"result":"')
    void writeMib(res, 'x', MAX_MCP_MESSAGE_BYTES + 4 * MIB).then(() => res.end())
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server }
}

describe('hostile MCP servers', () => {
  let registry: Registry
  beforeEach(() => {
    registry = new Registry({})
  })
  afterEach(() => registry.close())

  it('a stdio server that sends one endless line is refused at the cap, naming it', async () => {
    const endless = `const x = 'x'.repeat(${MIB}); const more = () => process.stdout.write(x, more); more()`
    await registry.addServer({
      name: 'endless',
      transport: 'stdio',
      command: process.execPath,
      args: ['-e', endless],
      timeoutMs: 60_000
    })
    await expect(registry.tools('endless')).rejects.toThrow(/endless sent a message larger than 10 MiB: refused/)
  })

  describe('over HTTP', () => {
    const servers: Server[] = []
    afterAll(() => Promise.all(servers.map((server) => new Promise((done) => server.close(done)))))

    it.each(['json', 'sse'] as const)(
      'an answer of one %s message past the cap is refused, naming it',
      async (kind) => {
        const { url, server } = await oversizedHttpServer(kind)
        servers.push(server)
        const entry = await registry.addServer({
          name: `big-${kind}`,
          transport: 'http',
          url,
          auth: { mode: 'none' },
          timeoutMs: 60_000
        })
        expect(entry.state).toBe('error')
        expect(entry.error?.message).toMatch(new RegExp(`big-${kind} sent a message larger than 10 MiB`))
      }
    )
  })

  describe('a tool list without end', () => {
    it('is refused past 100 pages, naming the cap', async () => {
      await registry.addServer({ name: 'pages', transport: 'stdio', command: process.execPath, args: [ENDLESS_TOOLS] })
      await expect(registry.tools('pages')).rejects.toThrow(/pages lists more than 10,000 tools or 100 pages/)
    })
  })
})
