import { describe, expect, it } from 'vitest'
import { McpServerEntrySchema } from '../../src/shared/contract/mcp'
import { parseConfigText } from '../../src/main/mcp/config/parse'
import { globMatches, toolVerdict, withToolExposed } from '../../src/main/mcp/tools/filter'
import { ToolGate } from '../../src/main/mcp/tools/gate'

describe('tool filter: globs, verdicts, edits and the gate', () => {
  it('matches `*` and `?` globs, case-sensitive, anchored at both ends', () => {
    const cases: Array<[string, string, boolean]> = [
      ['read_file', 'read_file', true],
      ['read_file', 'read_files', false],
      ['read_*', 'read_', true],
      ['read_*', 'Read_file', false],
      ['*_file', 'write_file', true],
      ['*', '', true],
      ['a*a', 'a', false],
      ['a*b*c', 'abc', true],
      ['a*b*c', 'aXbYbZc', true],
      ['a*b*c', 'acb', false],
      ['tool_00?', 'tool_007', true],
      ['tool_00?', 'tool_0071', false],
      ['?*?', 'x', false],
      ['*.list', 'admin.tools.list', true]
    ]
    for (const [pattern, name, expected] of cases)
      expect([pattern, name, globMatches(pattern, name)]).toEqual([pattern, name, expected])
    // a hostile name a million characters long costs one pass per pattern piece
    expect(globMatches('*x*y*z', `${'a'.repeat(1_000_000)}xyz`)).toBe(true)
  })

  it('deny wins over allow; an empty allow list hides everything', () => {
    expect(toolVerdict(undefined, 'x')).toEqual({ exposed: true, reason: null })
    expect(toolVerdict({ allow: ['x'], deny: ['x'] }, 'x')).toEqual({ exposed: false, reason: 'denied by "x"' })
    expect(toolVerdict({ allow: [] }, 'x')).toEqual({ exposed: false, reason: 'the allow list is empty' })
    expect(toolVerdict({ allow: ['y*'] }, 'x')).toEqual({ exposed: false, reason: 'not in the allow list' })
  })

  it('a tick changes the lists as little as it takes', () => {
    expect(withToolExposed(undefined, 'a', false)).toEqual({ deny: ['a'] })
    expect(withToolExposed({ deny: ['a'] }, 'a', true)).toBeUndefined()
    expect(withToolExposed({ allow: [] }, 'a', true)).toEqual({ allow: ['a'] })
    expect(withToolExposed({ allow: ['a', 'b'] }, 'a', false)).toEqual({ allow: ['b'] })
    // allowed by a glob: unticking denies it by name
    expect(withToolExposed({ allow: ['get_*'] }, 'get_x', false)).toEqual({ allow: ['get_*'], deny: ['get_x'] })
    expect(() => withToolExposed({ deny: ['delete_*'] }, 'delete_x', true)).toThrow(
      'delete_x is denied by the pattern "delete_*": remove that pattern to expose it'
    )
  })

  it('the entry schema validates the filter: unknown keys, blank and over-long patterns are refused with their path', async () => {
    const base = { transport: 'stdio', command: 'node' }
    expect(McpServerEntrySchema.safeParse({ ...base, tools: { allow: ['a*'], deny: [] } }).success).toBe(true)
    const file = JSON.stringify({
      servers: {
        only: { ...base, tools: { only: ['a'] } },
        blank: { ...base, tools: { deny: [''] } },
        long: { ...base, tools: { allow: ['x'.repeat(201)] } },
        many: { ...base, tools: { deny: Array.from({ length: 501 }, (_, i) => `t${i}`) } }
      }
    })
    const parsed = await parseConfigText(file, 'file', '/tmp/mcp.json', { env: {}, secret: async () => undefined })
    expect(parsed.entries.map((entry) => (entry.ok ? 'ok' : entry.error.message))).toEqual([
      'servers.only.tools: unknown field only (a tool filter has allow and deny)',
      'servers.blank.tools.deny.0: a tool pattern is empty',
      'servers.long.tools.allow.0: a tool pattern is at most 200 characters',
      'servers.many.tools.deny: at most 500 patterns'
    ])
  })

  it('the gate answers a call with no tool name itself and leaves requests of other methods and ids alone', () => {
    const gate = new ToolGate('fx', { deny: ['secret'] })
    const nameless = gate.fromHost({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { arguments: {} } })
    expect(nameless).toMatchObject({ forward: null, answer: { id: 1, error: { code: -32602 } } })
    // a server's answer to an id the host did not use for tools/list is passed as it is
    const other = {
      jsonrpc: '2.0' as const,
      id: 7,
      result: { tools: [{ name: 'secret', inputSchema: { type: 'object' } }] }
    }
    expect(gate.fromServer(other)).toBe(other)
    gate.fromHost({ jsonrpc: '2.0', id: 8, method: 'tools/list' })
    const listed = gate.fromServer({ ...other, id: 8 }) as unknown as { result: { tools: unknown[] } }
    expect(listed.result.tools).toEqual([])
  })
})
