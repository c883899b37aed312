// A small stdio MCP server for the registry tests: sleeps (recording cancellations), reports env and cwd, crashes.
/* global process, setTimeout, setInterval */
import { appendFileSync } from 'node:fs'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'

const server = new McpServer({ name: 'stdio-fixture', version: '1.0.0' })
const note = (line) => process.env.FIXTURE_LOG && appendFileSync(process.env.FIXTURE_LOG, `${line}\n`)
note(`started ${process.pid} ${process.argv.slice(2).join(' ')}`)

server.registerTool(
  'sleep',
  { description: 'Waits ms milliseconds', inputSchema: { ms: z.number() } },
  async ({ ms }, extra) => {
    extra.signal.addEventListener('abort', () => note(`cancelled sleep ${ms}`))
    await new Promise((resolve) => setTimeout(resolve, ms))
    return { content: [{ type: 'text', text: `slept ${ms}` }] }
  }
)
server.registerTool(
  'env',
  { description: 'Reads an environment variable', inputSchema: { name: z.string() } },
  async ({ name }) => ({
    content: [{ type: 'text', text: process.env[name] ?? '<unset>' }]
  })
)
server.registerTool('where', { description: 'The working directory and arguments' }, async () => ({
  content: [{ type: 'text', text: JSON.stringify({ cwd: process.cwd(), argv: process.argv.slice(2) }) }]
}))
server.registerTool('crash', { description: 'Exits the process' }, async () => process.exit(3))
// a server with work of its own (a watcher, a socket): it outlives the end of its stdin
if (process.env.FIXTURE_LINGER) setInterval(() => {}, 1000)
if (process.env.FIXTURE_CRASH_ON_START) {
  process.stderr.write('fixture: refusing to start\n')
  process.exit(1)
}
await server.connect(new StdioServerTransport())
