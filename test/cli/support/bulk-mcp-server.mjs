// A stdio MCP server with a large answer to every question: 3,000 tools, and `bulk` returning `bytes` of text.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'

const server = new McpServer({ name: 'bulk-fixture', version: '1.0.0' })
server.registerTool(
  'bulk',
  { description: 'Returns `bytes` characters of text', inputSchema: { bytes: z.number().int().positive() } },
  async ({ bytes }) => ({ content: [{ type: 'text', text: 'x'.repeat(bytes) }] })
)
for (let i = 0; i < 3_000; i++) {
  server.registerTool(
    `tool_${String(i).padStart(4, '0')}`,
    { description: `Tool ${i}: ${'a long description of what it does. '.repeat(16)}` },
    async () => ({ content: [{ type: 'text', text: `tool ${i}` }] })
  )
}
await server.connect(new StdioServerTransport())
