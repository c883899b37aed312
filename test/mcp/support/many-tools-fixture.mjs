// A stdio MCP server with many tools, for the tool filter: it records every tools/call it receives, and `grow`
// registers more tools at run time (the SDK then sends notifications/tools/list_changed).
/* global process */
import { appendFileSync } from 'node:fs'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'

const server = new McpServer({ name: 'many-tools', version: '1.0.0' })
const note = (line) => process.env.FIXTURE_LOG && appendFileSync(process.env.FIXTURE_LOG, `${line}\n`)
const tool = (name) =>
  server.registerTool(name, { description: `The ${name} tool` }, async () => {
    note(`called ${name}`)
    return { content: [{ type: 'text', text: `${name} done` }] }
  })

const COUNT = Number(process.env.FIXTURE_TOOLS ?? 100)
for (let i = 1; i <= COUNT; i++) tool(`tool_${String(i).padStart(3, '0')}`)
tool('read_file')
tool('write_file')
tool('delete_everything')
server.registerTool('grow', { description: 'Adds read_more and delete_more' }, async () => {
  note('called grow')
  tool('read_more')
  tool('delete_more')
  return { content: [{ type: 'text', text: 'grown' }] }
})
await server.connect(new StdioServerTransport())
