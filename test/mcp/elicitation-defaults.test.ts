import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { McpElicitation } from '../../src/shared/contract/mcp'
import { Registry } from '../../src/main/mcp/registry'
import { textOf, waitFor } from './support/processes'
import { runMcpCli } from './support/run-cli'

// SEP-1034: an elicitation's requested schema may give each field a default; an accepted answer that leaves a field
// out gets it. The SDK server of support/debug-fixture.mjs (`schedule`: a default for every field but an optional
// note; `confirm`: a required field without one), in a subprocess.

const FIXTURE = resolve(__dirname, 'support/debug-fixture.mjs')
const DEFAULTS = { when: 'tomorrow 09:00', minutes: 30, load: 0.5, priority: 'normal', remind: true }

describe('elicitation defaults (SEP-1034) in the registry', () => {
  let registry: Registry
  let asked: McpElicitation[]

  beforeEach(async () => {
    asked = []
    registry = new Registry({ onElicitation: (elicitation) => void asked.push(elicitation) })
    await registry.addServer({ name: 'debug', transport: 'stdio', command: process.execPath, args: [FIXTURE] })
  })
  afterEach(() => registry.close())

  async function answered(content?: Record<string, string | number | boolean>): Promise<unknown> {
    const call = registry.callTool('debug', 'schedule')
    await waitFor('the elicitation', () => asked.length === 1)
    await registry.elicitations.answer({ id: asked[0]!.id, action: 'accept', ...(content ? { content } : {}) })
    return JSON.parse(textOf(await call))
  }

  it('an answer accepted without content gets every default of the requested schema', async () => {
    expect(await answered()).toEqual({ action: 'accept', content: DEFAULTS })
  })

  it('the fields answered keep their values; the others get their defaults', async () => {
    expect(await answered({ minutes: 45, remind: false, note: 'after the backup' })).toEqual({
      action: 'accept',
      content: { ...DEFAULTS, minutes: 45, remind: false, note: 'after the backup' }
    })
  })

  it('a required field without a default must still be answered', async () => {
    const call = registry.callTool('debug', 'confirm')
    await waitFor('the elicitation', () => asked.length === 1)
    await expect(registry.elicitations.answer({ id: asked[0]!.id, action: 'accept' })).rejects.toThrow(
      /does not match the form of debug/
    )
    await registry.elicitations.answer({ id: asked[0]!.id, action: 'decline' })
    expect(JSON.parse(textOf(await call))).toEqual({ action: 'decline' })
  })
})

describe('elicitations in syncscope mcp call (a subprocess)', () => {
  let dir: string
  const cli = (args: string[]) =>
    runMcpCli([...args, '--config', join(dir, 'mcp.json'), '--data-dir', join(dir, 'data')], { cwd: dir })

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-elicit-'))
    await writeFile(
      join(dir, 'mcp.json'),
      JSON.stringify({ servers: { debug: { transport: 'stdio', command: process.execPath, args: [FIXTURE] } } })
    )
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('--accept-defaults accepts each form with its defaults, and says so', async () => {
    const run = await cli(['call', 'debug', 'schedule', '--accept-defaults'])
    expect(JSON.parse(run.stdout)).toEqual({ action: 'accept', content: DEFAULTS })
    expect(run.stderr).toContain('debug asks: Schedule the deploy? — accepted with its defaults')
    expect(run.code).toBe(0)
  })

  it('without the flag, a form is cancelled at once with the reason (the call does not wait for an answer)', async () => {
    const run = await cli(['call', 'debug', 'schedule'])
    expect(JSON.parse(run.stdout)).toEqual({ action: 'cancel' })
    expect(run.stderr).toContain('debug asks: Schedule the deploy? — cancelled: answer forms on the MCP page')
    expect(run.stderr).toContain('--accept-defaults')
    expect(run.code).toBe(0)
  })

  it('--accept-defaults cancels a form whose required fields have no default, naming them', async () => {
    const run = await cli(['call', 'debug', 'confirm', '--accept-defaults'])
    expect(JSON.parse(run.stdout)).toEqual({ action: 'cancel' })
    expect(run.stderr).toContain('debug asks: Deploy to production? — cancelled: confirm has no default')
    expect(run.code).toBe(0)
  })
})
