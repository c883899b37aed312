// A stdio MCP server (the SDK's low-level Server) whose tools/list never ends: every page names a next one.
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

const server = new Server({ name: 'endless-tools', version: '1.0.0' }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, async ({ params }) => {
  const page = Number(params?.cursor ?? 0)
  const tools = Array.from({ length: 50 }, (_, i) => ({
    name: `tool_${page}_${i}`,
    inputSchema: { type: 'object', properties: {} }
  }))
  return { tools, nextCursor: String(page + 1) }
})
await server.connect(new StdioServerTransport())
