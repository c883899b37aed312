// A stdio MCP server on the SDK's low-level Server (McpServer would refuse to send output that violates its own
// schema): structured output that conforms and one that does not, a resource link, and a tool that elicits.
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema
} from '@modelcontextprotocol/sdk/types.js'

const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'number' } },
  required: ['city', 'celsius'],
  additionalProperties: false
}
const tools = [
  {
    name: 'weather',
    description: 'Conforming structured output',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: weatherSchema
  },
  {
    name: 'broken',
    description: 'Structured output that violates its schema',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: weatherSchema
  },
  { name: 'report', description: 'Links to a resource', inputSchema: { type: 'object', properties: {} } },
  { name: 'confirm', description: 'Asks the person before it acts', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'schedule',
    description: 'Asks with a default for each field',
    inputSchema: { type: 'object', properties: {} }
  }
]

/** A form whose every field has a default (SEP-1034), but for an optional note. */
const scheduleForm = {
  type: 'object',
  properties: {
    when: { type: 'string', title: 'When', default: 'tomorrow 09:00' },
    minutes: { type: 'integer', default: 30 },
    load: { type: 'number', default: 0.5 },
    priority: { type: 'string', enum: ['low', 'normal', 'high'], default: 'normal' },
    remind: { type: 'boolean', default: true },
    note: { type: 'string' }
  },
  required: ['when', 'minutes']
}

const server = new Server({ name: 'debug-fixture', version: '1.0.0' }, { capabilities: { tools: {}, resources: {} } })
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }))
server.setRequestHandler(ReadResourceRequestSchema, async ({ params }) => {
  if (params.uri !== 'fixture://reports/1') throw new Error(`no resource ${params.uri}`)
  return { contents: [{ uri: params.uri, mimeType: 'text/plain', text: 'report one: all green' }] }
})
server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
  switch (params.name) {
    case 'weather':
      return {
        content: [{ type: 'text', text: '{"city":"Oslo","celsius":-3}' }],
        structuredContent: { city: 'Oslo', celsius: -3 }
      }
    case 'broken':
      return { content: [{ type: 'text', text: 'hot' }], structuredContent: { city: 'Oslo', celsius: 'hot', wind: 3 } }
    case 'report':
      return {
        content: [
          { type: 'text', text: 'two reports' },
          { type: 'resource_link', uri: 'fixture://reports/1', name: 'report 1' },
          { type: 'resource_link', uri: 'fixture://reports/missing', name: 'report 2' }
        ]
      }
    case 'confirm': {
      const answer = await server.elicitInput({
        message: 'Deploy to production?',
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean' }, note: { type: 'string' } },
          required: ['confirm']
        }
      })
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] }
    }
    case 'schedule': {
      const answer = await server.elicitInput({ message: 'Schedule the deploy?', requestedSchema: scheduleForm })
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] }
    }
    default:
      throw new Error(`unknown tool ${params.name}`)
  }
})
await server.connect(new StdioServerTransport())
