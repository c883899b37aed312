import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  applyClaudePermissions,
  claudeSettingsPath,
  planClaudePermissions,
  WRITTEN_RULES_FILE
} from '../../src/main/mcp/export/claude-permissions'
import { runMcpCli } from './support/run-cli'

let dir: string
let dataDir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-export-permissions-'))
  dataDir = join(dir, 'data')
  await mkdir(dataDir)
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** Claude Code's settings as a person has them: rules of their own, other settings. */
const THEIRS = `${JSON.stringify(
  {
    model: 'opus',
    permissions: { allow: ['Bash(npm test)'], deny: ['Bash(rm:*)', 'mcp__fx__delete_all'] },
    env: { FOO: '1' }
  },
  null,
  2
)}\n`

const settingsOf = async (path: string) =>
  JSON.parse(await readFile(path, 'utf8')) as { model: string; permissions: { allow: string[]; deny: string[] } }

describe("mcp export to Claude Code: the tool filters in Claude Code's own form (permissions.deny)", () => {
  it('adds deny rules for the patterns, names what only the launcher can enforce, and takes out only the rules it wrote', async () => {
    const path = join(dir, 'claude', 'settings.json')
    await mkdir(join(dir, 'claude'))
    await writeFile(path, THEIRS, { mode: 0o644 })

    const first = await planClaudePermissions(
      [
        { name: 'fx', filter: { allow: ['read_*', 'delete_all'], deny: ['drop_*', 'x?', 'delete_all'] } },
        { name: 'api', filter: undefined }
      ],
      dataDir,
      path
    )
    // the person's own mcp__fx__delete_all is there already: not added, and never ours
    expect(first).toMatchObject({ added: ['mcp__fx__drop_*'], removed: [] })
    expect(first.launcherOnly).toEqual(['fx: deny "x?"', 'fx: allow only ["read_*","delete_all"]'])
    expect(first.diff.filter((line) => line.startsWith('+ ')).map((line) => line.replace(/\s+/g, ' '))).toEqual([
      '+ "mcp__fx__delete_all",',
      '+ "mcp__fx__drop_*"'
    ])
    expect(await readFile(path, 'utf8')).toBe(THEIRS)
    await applyClaudePermissions(first)
    const written = await settingsOf(path)
    expect(written.permissions.deny).toEqual(['Bash(rm:*)', 'mcp__fx__delete_all', 'mcp__fx__drop_*'])
    expect(written.permissions.allow).toEqual(['Bash(npm test)'])
    expect(written.model).toBe('opus')
    expect(JSON.parse(await readFile(join(dataDir, WRITTEN_RULES_FILE), 'utf8'))).toEqual({
      [path]: ['mcp__fx__drop_*']
    })

    // the filter changes: what the export wrote goes, the person's rule stays although it names one of our servers
    const second = await planClaudePermissions([{ name: 'fx', filter: { deny: ['write_*'] } }], dataDir, path)
    expect(second).toMatchObject({ added: ['mcp__fx__write_*'], removed: ['mcp__fx__drop_*'] })
    await applyClaudePermissions(second)
    expect((await settingsOf(path)).permissions.deny).toEqual(['Bash(rm:*)', 'mcp__fx__delete_all', 'mcp__fx__write_*'])

    const none = await planClaudePermissions([{ name: 'fx', filter: undefined }], dataDir, path)
    expect(none).toMatchObject({ added: [], removed: ['mcp__fx__write_*'] })
    await applyClaudePermissions(none)
    expect((await settingsOf(path)).permissions.deny).toEqual(['Bash(rm:*)', 'mcp__fx__delete_all'])
    expect((await planClaudePermissions([{ name: 'fx', filter: undefined }], dataDir, path)).diff).toEqual([])
  })

  it('refuses to write over settings changed since the preview', async () => {
    const path = join(dir, 'changed', 'settings.json')
    await mkdir(join(dir, 'changed'))
    await writeFile(path, THEIRS)
    const plan = await planClaudePermissions([{ name: 'fx', filter: { deny: ['a'] } }], dataDir, path)
    await writeFile(path, THEIRS.replace('opus', 'sonnet'))
    await expect(applyClaudePermissions(plan)).rejects.toThrow(`${path} changed since the preview`)
    expect((await settingsOf(path)).permissions.deny).toEqual(['Bash(rm:*)', 'mcp__fx__delete_all'])
  })

  it('settings that are not JSON: left alone when no filter needs them, else refused in one line', async () => {
    const path = join(dir, 'broken', 'settings.json')
    await mkdir(join(dir, 'broken'))
    await writeFile(path, '{ "permissions": { // a comment\n } }')
    const unfiltered = await planClaudePermissions([{ name: 'fx', filter: undefined }], dataDir, path)
    expect(unfiltered.diff).toEqual([])
    await expect(planClaudePermissions([{ name: 'fx', filter: { deny: ['a'] } }], dataDir, path)).rejects.toThrow(
      /settings\.json is not valid JSON \(.+\); fix it by hand before exporting tool filters to it/
    )
  })

  it('finds Claude Code settings under ~/.claude, or CLAUDE_CONFIG_DIR', () => {
    expect(claudeSettingsPath('/home/ann', {})).toBe('/home/ann/.claude/settings.json')
    expect(claudeSettingsPath('/home/ann', { CLAUDE_CONFIG_DIR: '/etc/claude' })).toBe('/etc/claude/settings.json')
  })

  it('syncscope mcp export --to claude-code writes the launcher entry and the deny rules, previewed first', async () => {
    const home = join(dir, 'home')
    const workspace = join(dir, 'workspace')
    const cliData = join(dir, 'cli-data')
    await Promise.all([mkdir(home), mkdir(workspace), mkdir(cliData)])
    await writeFile(
      join(cliData, 'settings.json'),
      JSON.stringify({
        mcp: {
          servers: {
            fx: { transport: 'stdio', command: process.execPath, tools: { deny: ['delete_*'], allow: ['*'] } }
          }
        }
      })
    )
    const file = join(home, '.claude.json')
    const cli = (args: string[]) =>
      runMcpCli([
        'export',
        '--to',
        'claude-code',
        '--file',
        file,
        ...args,
        '--data-dir',
        cliData,
        '--workspace',
        workspace
      ])
    const preview = await cli([])
    expect(preview.code).toBe(0)
    expect(preview.stdout).toContain(`+++ ${join(home, '.claude', 'settings.json')} (after the export)`)
    expect(preview.stdout).toContain('"mcp__fx__delete_*"')
    expect(preview.stderr).toContain(
      'Claude Code has no rule for fx: allow only ["*"]: `syncscope mcp run` enforces it'
    )
    expect((await cli(['--yes'])).code).toBe(0)
    expect((await settingsOf(join(home, '.claude', 'settings.json'))).permissions.deny).toEqual(['mcp__fx__delete_*'])
    const entries = (JSON.parse(await readFile(file, 'utf8')) as { mcpServers: Record<string, { args: string[] }> })
      .mcpServers
    expect(entries.fx!.args.slice(1, 4)).toEqual(['mcp', 'run', 'fx'])
    const again = await cli([])
    expect(again.stdout).toContain("already has the filters' deny rules; nothing to change")
  }, 60_000)
})
