import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { encode } from 'gpt-tokenizer/encoding/o200k_base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ServerBudget } from '../../src/shared/contract/mcp-tools'
import { runMcpCli } from './support/run-cli'

const EVERYTHING = resolve(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js')

let dir: string
let config: string
const cli = (args: string[]) => runMcpCli([...args, '--config', config, '--data-dir', join(dir, 'data')])
const fileFilter = async () =>
  (JSON.parse(await readFile(config, 'utf8')) as { servers: { everything: { tools?: unknown } } }).servers.everything
    .tools

describe('syncscope mcp tools --budget, and the tool filter from the command line', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-budget-cli-'))
    config = join(dir, 'mcp.json')
    await writeFile(
      config,
      JSON.stringify({
        servers: { everything: { transport: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] } }
      })
    )
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('--budget --json: per-tool counts of the exact definitions, summing to the total; the text form names the tokenizer', async () => {
    const run = await cli(['tools', 'everything', '--budget', '--json', '--context-window', '128000'])
    expect(run.code).toBe(0)
    const budget = JSON.parse(run.stdout) as ServerBudget & { contextWindow: number }
    expect(budget.contextWindow).toBe(128_000)
    expect(budget.tools.length).toBeGreaterThan(10)
    for (const tool of budget.tools) expect(tool.tokens).toBe(encode(tool.serialized).length)
    expect(budget.total.tokens).toBe(budget.tools.reduce((sum, tool) => sum + tool.tokens, 0))
    expect(budget.exposed).toEqual(budget.total)

    const text = await cli(['tools', 'everything', '--budget'])
    expect(text.stdout).toContain(
      `everything: ${budget.total.tools} tools, ${budget.total.tokens} tokens as Claude Code sends them`
    )
    expect(text.stdout).toMatch(/^ +60 +0\.03% +6 +39 +- +mcp__everything__echo$/m)
    expect(text.stdout).toContain('tokens: o200k_base (gpt-tokenizer 4.0.0)')
    expect(text.stdout).toContain('approximation')
  }, 60_000)

  it('--allow, --deny, --unset and --expose-all edit the filter in the entry, which the listing and the budget follow', async () => {
    const denied = await cli(['tools', 'everything', '--deny', 'get-*', '--allow', 'get-*', '--allow', 'echo'])
    expect(denied.code).toBe(0)
    expect(await fileFilter()).toEqual({ allow: ['get-*', 'echo'], deny: ['get-*'] })
    expect(denied.stdout).toContain('mcp__everything__get-env  Returns all environment variables')
    expect(denied.stdout).toMatch(/get-env .*\[hidden: denied by "get-\*"\]/)
    expect(denied.stdout).toMatch(/gzip-file-as-resource .*\[hidden: not in the allow list\]/)
    expect(denied.stdout).not.toMatch(/mcp__everything__echo .*hidden/)

    const budget = JSON.parse((await cli(['tools', 'everything', '--budget', '--json'])).stdout) as ServerBudget
    expect(budget.exposed.tools).toBe(1)
    expect(budget.exposed.tokens).toBe(budget.tools.find((tool) => tool.tool === 'echo')!.tokens)

    await cli(['tools', 'everything', '--unset', 'get-*'])
    expect(await fileFilter()).toEqual({ allow: ['echo'] })
    await cli(['tools', 'everything', '--expose-all'])
    expect(await fileFilter()).toBeUndefined()
  }, 60_000)

  it('refuses a pattern that is not one, and --expose-all with edits, in one line each (exit 1 and 2)', async () => {
    const bad = await cli(['tools', 'everything', '--deny', 'two words'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('servers.everything.tools.deny.0: a tool pattern has no spaces or control characters')
    expect(await fileFilter()).toBeUndefined()
    const mixed = await cli(['tools', 'everything', '--expose-all', '--deny', 'x'])
    expect(mixed.code).toBe(2)
    expect(mixed.stderr).toContain('--expose-all removes the whole filter: give it alone')
  }, 60_000)
})
