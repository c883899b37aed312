import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfigText } from '../../src/main/mcp/config/parse'
import { EXPORT_HOSTS, hostConfigPath, type ExportHost } from '../../src/main/mcp/export/hosts'
import { describeHostExports, exportToHost } from '../../src/main/mcp/export/host-exports'
import { applyExport, planExport, type LauncherCommand } from '../../src/main/mcp/export/launcher-entries'
import { Registry } from '../../src/main/mcp/registry'

const COMMAND: LauncherCommand = {
  node: '/opt/node/bin/node',
  bin: '/opt/syncscope/bin/syncscope.js',
  dataDir: '/home/ann/.local/share/syncscope',
  workspace: '/home/ann/project'
}

/** Each host's file as the host itself writes it, with servers and settings that are not ours. */
const FILES: Record<ExportHost, { text: string; map: 'mcpServers' | 'servers' }> = {
  'claude-desktop': {
    map: 'mcpServers',
    text: `{\n  "mcpServers": {\n    "filesystem": {\n      "command": "npx",\n      "args": [\n        "-y",\n        "@modelcontextprotocol/server-filesystem",\n        "/home/ann"\n      ]\n    }\n  },\n  "globalShortcut": "Ctrl+Space"\n}\n`
  },
  'claude-code': {
    map: 'mcpServers',
    text: `${JSON.stringify({ numStartups: 42, theme: 'dark', projects: { '/home/ann/project': { allowedTools: [] } }, mcpServers: { github: { type: 'http', url: 'https://api.githubcopilot.com/mcp/', headers: { Authorization: 'Bearer ${GITHUB_PAT}' } } }, userID: 'abc' }, null, 2)}`
  },
  vscode: {
    map: 'servers',
    text: `{\n\t"servers": {\n\t\t"playwright": {\n\t\t\t"type": "stdio",\n\t\t\t"command": "npx",\n\t\t\t"args": [\n\t\t\t\t"@playwright/mcp@latest"\n\t\t\t]\n\t\t}\n\t},\n\t"inputs": [\n\t\t{\n\t\t\t"type": "promptString",\n\t\t\t"id": "token",\n\t\t\t"description": "API token",\n\t\t\t"password": true\n\t\t}\n\t]\n}\n`
  },
  cursor: {
    map: 'mcpServers',
    text: `{\n    "mcpServers": {\n        "linear": {\n            "url": "https://mcp.linear.app/sse"\n        }\n    }\n}\n`
  }
}

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-export-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

const parsed = (text: string) => JSON.parse(text) as Record<string, Record<string, unknown>>

describe('mcp export: each host file round-trips, keeping what is not ours', () => {
  for (const host of EXPORT_HOSTS) {
    it(`${host}: previews, writes our launcher entries, keeps unrelated entries, keys and indentation, and reads back`, async () => {
      const { text, map } = FILES[host]
      const path = join(dir, `${host}.json`)
      await writeFile(path, text, { mode: 0o640 })
      const original = parsed(text)

      const plan = await planExport(host, ['fx', 'api'], COMMAND, path)
      expect(plan).toMatchObject({ added: ['fx', 'api'], updated: [], removed: [], conflicts: [] })
      expect(plan.diff.some((line) => line.startsWith('+ ') && line.includes('"fx"'))).toBe(true)
      // at most one line of theirs changes: the closing brace that gains a comma before our entries
      const removedLines = plan.diff.filter((line) => line.startsWith('- '))
      expect(removedLines.length).toBeLessThanOrEqual(1)
      for (const line of removedLines) expect(line).toMatch(/^-\s+}$/)
      expect(await readFile(path, 'utf8')).toBe(text)

      await applyExport(plan)
      const written = await readFile(path, 'utf8')
      expect((await stat(path)).mode & 0o777).toBe(0o640)
      const after = parsed(written)
      // everything that was there is there, in the same order, and only our two entries were added
      expect(Object.keys(after)).toEqual(Object.keys(original))
      for (const key of Object.keys(original)) if (key !== map) expect(after[key]).toEqual(original[key])
      expect(Object.keys(after[map]!)).toEqual([...Object.keys(original[map]!), 'fx', 'api'])
      for (const [name, entry] of Object.entries(original[map]!)) expect(after[map]![name]).toEqual(entry)
      expect(after[map]!.fx).toEqual({
        ...(host === 'vscode' || host === 'claude-code' ? { type: 'stdio' } : {}),
        command: COMMAND.node,
        args: [COMMAND.bin, 'mcp', 'run', 'fx', '--data-dir', COMMAND.dataDir, '--workspace', COMMAND.workspace]
      })
      // formatting: the file's own indentation and final newline; lines of the entries that were there are unchanged
      expect(written.endsWith('\n')).toBe(text.endsWith('\n'))
      const untouched = text.split('\n').slice(0, 3)
      expect(written.split('\n').slice(0, 3)).toEqual(untouched)
      // and the host's format reads back as stdio servers that run the launcher
      const read = await parseConfigText(written, 'file', path, { env: {}, secret: async () => undefined })
      const fx = read.entries.find((entry) => entry.name === 'fx')
      expect(fx).toMatchObject({ ok: true, config: { transport: 'stdio', command: COMMAND.node } })

      // a second export changes nothing; dropping a server removes only our entry for it
      expect((await planExport(host, ['fx', 'api'], COMMAND, path)).diff).toEqual([])
      const shrink = await planExport(host, ['fx'], COMMAND, path)
      expect(shrink).toMatchObject({ added: [], removed: ['api'] })
      await applyExport(shrink)
      const shrunk = parsed(await readFile(path, 'utf8'))
      expect(Object.keys(shrunk[map]!)).toEqual([...Object.keys(original[map]!), 'fx'])
    })
  }

  it('leaves an entry of the same name that is not ours, and refuses to write over a file changed since the preview', async () => {
    const path = join(dir, 'conflict.json')
    await writeFile(path, `${JSON.stringify({ mcpServers: { fx: { command: 'their-fx' } } }, null, 2)}\n`)
    const plan = await planExport('cursor', ['fx', 'api'], COMMAND, path)
    expect(plan).toMatchObject({ added: ['api'], conflicts: ['fx'] })
    await writeFile(
      path,
      `${JSON.stringify({ mcpServers: { fx: { command: 'their-fx' }, other: { command: 'x' } } }, null, 2)}\n`
    )
    await expect(applyExport(plan)).rejects.toThrow(
      `${path} changed since the preview; run the export again to see the new diff`
    )
    const fresh = await planExport('cursor', ['fx', 'api'], COMMAND, path)
    await applyExport(fresh)
    expect(parsed(await readFile(path, 'utf8')).mcpServers).toEqual({
      fx: { command: 'their-fx' },
      other: { command: 'x' },
      api: expect.objectContaining({ command: COMMAND.node })
    })
  })

  it('refuses a host file that is not JSON rather than overwrite it, and relative paths in the entry', async () => {
    const path = join(dir, 'broken.json')
    await writeFile(path, '{ "mcpServers": { // a comment\n } }')
    await expect(planExport('claude-desktop', ['fx'], COMMAND, path)).rejects.toThrow(
      /is not valid JSON \(.+\); fix it by hand/
    )
    await expect(
      planExport('claude-desktop', ['fx'], { ...COMMAND, node: 'node' }, join(dir, 'new.json'))
    ).rejects.toThrow('the node path must be absolute (got node)')
  })

  it('finds each host file at its real place per OS', () => {
    expect(hostConfigPath('claude-desktop', '/Users/ann', 'darwin', {})).toBe(
      '/Users/ann/Library/Application Support/Claude/claude_desktop_config.json'
    )
    expect(hostConfigPath('claude-desktop', '/home/ann', 'linux', {})).toBe(
      '/home/ann/.config/Claude/claude_desktop_config.json'
    )
    expect(hostConfigPath('vscode', '/Users/ann', 'darwin', {})).toBe(
      '/Users/ann/Library/Application Support/Code/User/mcp.json'
    )
    expect(
      hostConfigPath('vscode', 'C:\\Users\\ann', 'win32', { APPDATA: 'C:\\Users\\ann\\AppData\\Roaming' })
    ).toMatch(/Roaming.Code.User.mcp\.json$/)
    expect(hostConfigPath('claude-code', '/home/ann', 'linux', {})).toBe('/home/ann/.claude.json')
    expect(hostConfigPath('cursor', '/home/ann', 'linux', {})).toBe('/home/ann/.cursor/mcp.json')
  })

  it('what the MCP page shows: each host file, its servers and the diff; writing it refuses a file changed since', async () => {
    const registry = new Registry({ connectOnDemand: true })
    await registry.applyConfig({
      servers: [
        { name: 'fx', transport: 'stdio', command: 'node' },
        { name: 'off', transport: 'stdio', command: 'node', disabled: true }
      ],
      invalid: [{ name: 'broken', error: { code: 'invalid_config', message: 'command is empty' } }]
    })
    const pathOf = (host: ExportHost) => join(dir, 'page', `${host}.json`)
    await rm(join(dir, 'page'), { recursive: true, force: true })
    await mkdir(join(dir, 'page'))
    await writeFile(pathOf('cursor'), FILES.cursor.text)
    await writeFile(pathOf('vscode'), '{ not json')
    const shown = await describeHostExports(registry, COMMAND, pathOf)
    expect(
      shown.map(({ host, exists, servers, added, error }) => ({
        host,
        exists,
        servers,
        added,
        error: error ? 'error' : null
      }))
    ).toEqual([
      { host: 'claude-desktop', exists: false, servers: [], added: ['fx'], error: null },
      { host: 'claude-code', exists: false, servers: [], added: ['fx'], error: null },
      { host: 'vscode', exists: true, servers: [], added: [], error: 'error' },
      { host: 'cursor', exists: true, servers: ['linear'], added: ['fx'], error: null }
    ])
    const cursor = shown.find((file) => file.host === 'cursor')!
    await writeFile(pathOf('cursor'), FILES.cursor.text.replace('sse', 'mcp'))
    await expect(exportToHost(registry, 'cursor', cursor.beforeDigest, COMMAND, pathOf('cursor'))).rejects.toThrow(
      'changed since the preview'
    )
    const again = (await describeHostExports(registry, COMMAND, pathOf)).find((file) => file.host === 'cursor')!
    const written = await exportToHost(registry, 'cursor', again.beforeDigest, COMMAND, pathOf('cursor'))
    expect(written).toMatchObject({ servers: ['linear', 'fx'], diff: [], added: [] })
    await registry.close()
  })
})
