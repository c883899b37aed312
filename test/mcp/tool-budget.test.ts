import { resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { encode } from 'gpt-tokenizer/encoding/o200k_base'
import { Tiktoken } from 'js-tiktoken/lite'
import o200k from 'js-tiktoken/ranks/o200k_base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { McpServerConfig } from '../../src/shared/contract/mcp'
import type { ServerBudget } from '../../src/shared/contract/mcp-tools'
import { Registry } from '../../src/main/mcp/registry'
import { CLAUDE_DESCRIPTION_LIMIT, serverBudget } from '../../src/main/mcp/tools/budget'
import { measureServer } from '../../src/main/mcp/tools/budgets'
import { countTokens } from '../../src/main/mcp/tools/tokenizer'
import { startMcpHttpServer, type RunningMcpHttpServer } from './support/mcp-http-server'

const NODE_MODULES = resolve(__dirname, '../../node_modules')
const EVERYTHING = resolve(NODE_MODULES, '@modelcontextprotocol/server-everything/dist/index.js')
const SDK_EXAMPLES = resolve(NODE_MODULES, '@modelcontextprotocol/sdk/dist/esm/examples/server')

/** A second, independent o200k_base implementation (js-tiktoken): the numbers are the tokenizer's, not ours. */
const reference = new Tiktoken(o200k)
/** Special tokens in a description are ordinary text, as a host sends them. */
const referenceCount = (text: string) => reference.encode(text, [], []).length

const SERVERS: McpServerConfig[] = [
  { name: 'everything', transport: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] },
  {
    name: 'output-schema',
    transport: 'stdio',
    command: process.execPath,
    args: [resolve(SDK_EXAMPLES, 'mcpServerOutputSchema.js')]
  }
]

let registry: Registry
let http: RunningMcpHttpServer

/** The tools as the server lists them, read with the SDK's own client: what the budget must price. */
async function listedBySdk(config: Extract<McpServerConfig, { transport: 'stdio' }>) {
  // with the capabilities the registry declares: server-everything lists its elicitation tool only to such clients
  const client = new Client({ name: 'reference', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } })
  await client.connect(new StdioClientTransport({ command: config.command, args: config.args ?? [], stderr: 'ignore' }))
  const { tools } = await client.listTools()
  await client.close()
  return tools
}

function expectConsistent(budget: ServerBudget): void {
  for (const tool of budget.tools) {
    expect(tool.exact).toBe(true)
    expect(tool.tokens).toBe(encode(tool.serialized).length)
    expect(tool.tokens).toBe(referenceCount(tool.serialized))
  }
  const sum = (list: ServerBudget['tools']) => list.reduce((total, tool) => total + tool.tokens, 0)
  expect(budget.total).toEqual({ tools: budget.tools.length, tokens: sum(budget.tools) })
  const exposed = budget.tools.filter((tool) => tool.exposed)
  expect(budget.exposed).toEqual({ tools: exposed.length, tokens: sum(exposed) })
}

describe('tool budget: token counts of the definitions hosts send, on real servers', () => {
  beforeAll(async () => {
    registry = new Registry({})
    http = await startMcpHttpServer({ kind: 'none' })
    for (const server of SERVERS) await registry.addServer(server)
    await registry.addServer({ name: 'remote', transport: 'http', url: http.url, auth: { mode: 'none' } })
  })
  afterAll(async () => {
    await registry?.close()
    await http?.stop()
  })

  it('a known small definition gives a known count', () => {
    // "hello world" is two o200k_base tokens, 24912 and 2375, in both implementations
    expect(encode('hello world')).toEqual([24912, 2375])
    expect(reference.encode('hello world')).toEqual([24912, 2375])
    expect(countTokens('hello world')).toEqual({ tokens: 2, exact: true })
    const budget = serverBudget(
      'fx',
      [
        {
          name: 'mcp__fx__echo',
          tool: 'echo',
          title: null,
          description: 'Echoes the text back.',
          inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          outputSchema: null
        }
      ],
      undefined,
      'claude'
    )
    expect(budget.tools[0]!.serialized).toBe(
      '{"name":"mcp__fx__echo","description":"Echoes the text back.","input_schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}'
    )
    expect(budget.tools[0]).toMatchObject({
      tokens: 39,
      exact: true,
      parts: {
        name: referenceCount('mcp__fx__echo'),
        description: referenceCount('Echoes the text back.'),
        inputSchema: referenceCount('{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}'),
        outputSchema: null
      }
    })
    expect(budget.total).toEqual({ tools: 1, tokens: 39 })
  })

  for (const config of SERVERS) {
    it(`${config.name}: each tool's count is the tokenizer's count of its exact definition, and they sum to the total`, async () => {
      const budget = await measureServer(registry, config.name, 'claude')
      const listed = await listedBySdk(config as Extract<McpServerConfig, { transport: 'stdio' }>)
      expect(budget.tools.map((tool) => tool.tool)).toEqual(listed.map((tool) => tool.name))
      expectConsistent(budget)
      for (const [index, tool] of budget.tools.entries()) {
        const source = listed[index]!
        // Claude Code's form: the prefixed name, the description, the input schema; never the output schema
        expect(JSON.parse(tool.serialized)).toEqual({
          name: `mcp__${config.name.replace(/[^A-Za-z0-9_-]/g, '_')}__${source.name}`,
          ...(source.description !== undefined ? { description: source.description } : {}),
          input_schema: source.inputSchema
        })
        expect(tool.parts.outputSchema).toBe(
          source.outputSchema ? referenceCount(JSON.stringify(source.outputSchema)) : null
        )
        expect(tool.parts.inputSchema).toBe(referenceCount(JSON.stringify(source.inputSchema)))
      }
      expect(budget.tokenizer).toMatchObject({ package: 'gpt-tokenizer', version: '4.0.0', encoding: 'o200k_base' })
      expect(budget.tokenizer.note).toContain('approximation')
    }, 60_000)
  }

  it('the SDK example with an output schema: counted on its own, not sent', async () => {
    const budget = await measureServer(registry, 'output-schema', 'claude')
    const weather = budget.tools.find((tool) => tool.tool === 'get_weather')!
    expect(weather.parts.outputSchema).toBeGreaterThan(50)
    expect(weather.serialized).not.toContain('fahrenheit')
  }, 60_000)

  it('a server over streamable HTTP (built with the SDK), in the OpenAI function form VS Code sends', async () => {
    const budget = await measureServer(registry, 'remote', 'openai')
    expectConsistent(budget)
    expect(JSON.parse(budget.tools.find((tool) => tool.tool === 'echo')!.serialized)).toMatchObject({
      type: 'function',
      function: { name: 'mcp_remote_echo', description: 'Echoes text', parameters: { type: 'object' } }
    })
  }, 60_000)

  it('the filter: exposed totals count only what hosts get', async () => {
    const tools = await registry.tools('everything')
    const budget = serverBudget('everything', tools, { allow: ['get-*', 'echo'], deny: ['get-env'] }, 'claude')
    expectConsistent(budget)
    expect(budget.tools.find((tool) => tool.tool === 'get-env')).toMatchObject({
      exposed: false,
      reason: 'denied by "get-env"'
    })
    expect(budget.tools.find((tool) => tool.tool === 'gzip-file-as-resource')).toMatchObject({
      exposed: false,
      reason: 'not in the allow list'
    })
    expect(budget.exposed.tools).toBe(
      tools.filter((tool) => /^get-|^echo$/.test(tool.tool) && tool.tool !== 'get-env').length
    )
    expect(budget.exposed.tokens).toBeLessThan(budget.total.tokens)
  }, 60_000)

  it("Claude Code's form cuts a description at 2048 characters, as Claude Code does", () => {
    const long = 'word '.repeat(1000)
    const [cost] = serverBudget(
      's',
      [
        { name: 'x', tool: 'long', title: null, description: long, inputSchema: { type: 'object' }, outputSchema: null }
      ],
      undefined,
      'claude'
    ).tools
    const sent = JSON.parse(cost!.serialized) as { description: string }
    expect(sent.description).toBe(`${long.slice(0, CLAUDE_DESCRIPTION_LIMIT)}… [truncated]`)
    expect(cost!.tokens).toBe(referenceCount(cost!.serialized))
  })

  it('hostile text: special-token text is ordinary text; a 200,000-letter word is counted (estimated) without stalling', () => {
    const special = 'stop <|endoftext|> here'
    expect(countTokens(special)).toEqual({ tokens: referenceCount(special), exact: true })
    const word = 'a'.repeat(200_000)
    const counted = countTokens(`{"description":"${word}"}`)
    expect(counted.exact).toBe(false)
    // the exact count is 25,000 tokens of eight letters and the JSON around: cut into parts, it stays close
    expect(counted.tokens).toBeGreaterThan(25_000)
    expect(counted.tokens).toBeLessThan(25_000 * 1.05)
  })
})
