import { resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mcpCalls, mcpEvents, type McpElicitation } from '../../src/shared/contract/mcp'
import { Registry } from '../../src/main/mcp/registry'
import { textOf, waitFor } from './support/processes'

// Tool calls as a developer debugs them, against a real SDK server in a subprocess.

const FIXTURE = resolve(__dirname, 'support/debug-fixture.mjs')
let registry: Registry
let asked: McpElicitation[]

beforeEach(async () => {
  asked = []
  registry = new Registry({
    onElicitation: (elicitation) => void asked.push(mcpEvents['mcp.elicitation'].payload.parse(elicitation))
  })
  await registry.addServer({ name: 'debug', transport: 'stdio', command: process.execPath, args: [FIXTURE] })
})

afterEach(() => registry.close())

describe('tool calls as a developer debugs them', () => {
  it('shows the raw JSON-RPC request and response of a call, and every list and call in the log', async () => {
    const tools = await registry.tools('debug')
    expect(tools.find((tool) => tool.tool === 'weather')?.outputSchema).toMatchObject({ required: ['city', 'celsius'] })
    const traced = await registry.traceCall('debug', 'weather', {})
    expect(traced.rpc?.request).toMatchObject({
      jsonrpc: '2.0',
      method: 'tools/call',
      params: { name: 'weather', arguments: {} }
    })
    expect(traced.rpc?.response).toMatchObject({
      jsonrpc: '2.0',
      id: (traced.rpc?.request as { id: number }).id,
      result: { structuredContent: { city: 'Oslo', celsius: -3 } }
    })
    const methods = registry
      .rpcMessages('debug')
      .map((entry) => `${entry.direction} ${(entry.message as { method?: string }).method ?? 'response'}`)
    expect(methods).toEqual(
      expect.arrayContaining(['sent initialize', 'sent tools/list', 'sent tools/call', 'received response'])
    )
    expect(() => mcpCalls['mcp.rpcLog'].output.parse(registry.rpcMessages('debug'))).not.toThrow()
  })

  it('checks structured output against the output schema: a conforming result passes, a violating one names each fault', async () => {
    expect((await registry.traceCall('debug', 'weather', {})).outputErrors).toEqual([])
    const broken = await registry.traceCall('debug', 'broken', {})
    expect(broken.result?.structuredContent).toEqual({ city: 'Oslo', celsius: 'hot', wind: 3 })
    expect(broken.outputErrors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/celsius.*must be number/),
        expect.stringMatching(/additional properties/)
      ])
    )
    await expect(registry.callTool('debug', 'broken')).rejects.toMatchObject({
      code: 'server_error',
      message: expect.stringContaining('violates its output schema')
    })
    expect((await registry.traceCall('debug', 'report', {})).outputErrors).toBeNull()
  })

  it('follows resource links: each read from the server, a missing one with its error', async () => {
    const traced = await registry.traceCall('debug', 'report', {})
    expect(traced.links).toEqual([
      {
        uri: 'fixture://reports/1',
        contents: [{ uri: 'fixture://reports/1', mimeType: 'text/plain', text: 'report one: all green' }]
      },
      { uri: 'fixture://reports/missing', error: expect.stringContaining('no resource fixture://reports/missing') }
    ])
    expect(
      registry
        .rpcMessages('debug')
        .filter((entry) => (entry.message as { method?: string }).method === 'resources/read')
    ).toHaveLength(2)
  })

  it('answers an elicitation through the contract: announced, listed while it waits, a wrong answer refused, the right one delivered', async () => {
    const call = registry.callTool('debug', 'confirm')
    await waitFor('the elicitation', () => asked.length === 1)
    const [question] = asked
    expect(question).toMatchObject({
      server: 'debug',
      message: 'Deploy to production?',
      mode: 'form',
      requestedSchema: { required: ['confirm'] }
    })
    expect(mcpCalls['mcp.elicitations'].output.parse(registry.elicitations.list())).toEqual([question])
    const wrong = mcpCalls['mcp.answerElicitation'].input.parse({
      id: question!.id,
      action: 'accept',
      content: { confirm: 'yes please' }
    })
    await expect(registry.elicitations.answer(wrong)).rejects.toThrow(/does not match the form/)
    await registry.elicitations.answer(
      mcpCalls['mcp.answerElicitation'].input.parse({
        id: question!.id,
        action: 'accept',
        content: { confirm: true, note: 'go' }
      })
    )
    expect(JSON.parse(textOf(await call))).toEqual({ action: 'accept', content: { confirm: true, note: 'go' } })
    expect(registry.elicitations.list()).toEqual([])
    await expect(registry.elicitations.answer({ id: question!.id, action: 'decline' })).rejects.toThrow(
      /no elicitation/
    )
  })

  it('a declined elicitation reaches the server as decline', async () => {
    const call = registry.callTool('debug', 'confirm')
    await waitFor('the elicitation', () => asked.length === 1)
    await registry.elicitations.answer({ id: asked[0]!.id, action: 'decline' })
    expect(JSON.parse(textOf(await call))).toEqual({ action: 'decline' })
  })
})
