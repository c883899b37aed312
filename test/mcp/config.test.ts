import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { McpHost } from '../../src/main/mcp/host'
import { MASK } from '../../src/main/mcp/mask'
import { fileSecretStore, type SecretStore } from '../../src/main/mcp/persistence/secret-store'
import { parseConfigText } from '../../src/main/mcp/config/parse'
import { boundName, entryBinding } from '../../src/main/mcp/persistence/binding'
import { textOf, waitFor } from './support/processes'
import { approveWorkspaceFile } from './support/trust'

const FIXTURE = resolve(__dirname, 'support/stdio-fixture.mjs')
const stdio = (extra: Record<string, unknown> = {}) => ({
  transport: 'stdio',
  command: process.execPath,
  args: [FIXTURE],
  ...extra
})
const noSecrets = { env: {}, secret: async () => undefined }

let dir: string
let workspace: string
let settingsFile: string
let store: SecretStore
let host: McpHost | null

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-mcp-config-'))
  workspace = join(dir, 'workspace')
  settingsFile = join(dir, 'data', 'settings.json')
  store = fileSecretStore(join(dir, 'data', 'mcp-secrets.json'))
  host = null
})

afterEach(async () => {
  await host?.close()
  await rm(dir, { recursive: true, force: true })
})

async function writeJson(path: string, value: unknown, indent: string | number = 2): Promise<void> {
  await import('node:fs/promises').then((fs) => fs.mkdir(resolve(path, '..'), { recursive: true }))
  await writeFile(path, `${JSON.stringify(value, null, indent)}\n`)
}

/** The workspace mcp.json as the person approved it. */
async function writeApproved(value: unknown): Promise<void> {
  await writeJson(join(workspace, 'mcp.json'), value)
  await approveWorkspaceFile(join(dir, 'data'), workspace)
}

/** The account a secret typed in for an entry is stored under: its name and where it goes. */
const secretOf = (name: string, entry: Record<string, unknown>, field: string) =>
  `secret:${boundName({ name, binding: entryBinding(entry) })}:${field}`

async function startHost(env: NodeJS.ProcessEnv = {}, watch = false): Promise<McpHost> {
  host = new McpHost({ workspace, settingsFile, secretStore: store, env, watch })
  await host.start()
  return host
}

describe('config records and files', () => {
  it('expands ${VAR}, ${VAR:-default} and ${env:VAR} before validation, and names an unset variable', async () => {
    const parsed = await parseConfigText(
      JSON.stringify({
        servers: {
          api: {
            transport: 'http',
            url: 'http://127.0.0.1:9/${PATH_PART:-mcp}',
            auth: { mode: 'apiKey', key: '${API_KEY}', valuePrefix: 'Bearer ' }
          },
          tool: { transport: 'stdio', command: '${env:NODE_BIN}', args: ['${workspaceRoot}/x'] },
          missing: {
            transport: 'http',
            url: 'http://127.0.0.1:9/mcp',
            auth: { mode: 'apiKey', key: '${NOT_SET_ANYWHERE}' }
          }
        }
      }),
      'workspace',
      '/w/mcp.json',
      { env: { API_KEY: 'k-123', NODE_BIN: '/usr/bin/node' }, secret: async () => undefined }
    )
    const [api, tool, missing] = parsed.entries
    expect(api).toMatchObject({ ok: true, config: { url: 'http://127.0.0.1:9/mcp', auth: { key: 'k-123' } } })
    expect(tool).toMatchObject({ ok: true, config: { command: '/usr/bin/node', args: ['${workspaceRoot}/x'] } })
    expect(missing).toMatchObject({
      ok: false,
      error: { code: 'invalid_config', path: ['servers', 'missing', 'auth', 'key'], source: '/w/mcp.json' }
    })
    expect(missing?.ok === false && missing.error.message).toMatch(/NOT_SET_ANYWHERE is not set/)
  })

  it('rejects reference-style secret keys with a message saying secrets are inline', async () => {
    const parsed = await parseConfigText(
      JSON.stringify({
        servers: {
          gh: {
            transport: 'http',
            url: 'https://example.test/mcp',
            auth: {
              mode: 'clientCredentials',
              tokenUrl: 'https://example.test/token',
              clientIdRef: 'a',
              clientSecretRef: 'b'
            }
          }
        }
      }),
      'workspace',
      null,
      noSecrets
    )
    const [entry] = parsed.entries
    expect(entry?.ok).toBe(false)
    expect(entry?.ok === false && entry.error.message).toMatch(/clientIdRef, clientSecretRef: secrets are given inline/)
  })

  it('checks transport and auth.mode and names the path at fault', async () => {
    const parsed = await parseConfigText(
      JSON.stringify({
        servers: {
          a: { transport: 'ws', url: 'x' },
          b: { transport: 'http', url: 'https://e.test', auth: { mode: 'magic' } },
          'bad name': stdio()
        }
      }),
      'workspace',
      null,
      noSecrets
    )
    expect(parsed.entries.map((entry) => (entry.ok ? 'ok' : entry.error.message))).toEqual([
      'servers.a.transport: transport must be "http" or "stdio"',
      'servers.b.auth.mode: auth.mode must be none, apiKey, clientCredentials or authorizationCode',
      'servers.bad name: a server name is 1–64 letters, digits, `_` or `-`'
    ])
  })

  it('imports the mcpServers map (Claude Desktop/Code, Cursor, Inspector) and VS Code servers + inputs', async () => {
    const claude = await parseConfigText(
      JSON.stringify({
        mcpServers: {
          files: { command: 'npx', args: ['-y', 'server'], env: { A: '1' } },
          remote: { type: 'http', url: 'https://e.test/mcp', headers: { 'X-Team': 't' } },
          cursor: { url: 'https://c.test/mcp' }
        }
      }),
      'file',
      null,
      noSecrets
    )
    expect(claude.format).toBe('mcpServers')
    expect(claude.entries.map((entry) => entry.ok && entry.config)).toEqual([
      { name: 'files', transport: 'stdio', command: 'npx', args: ['-y', 'server'], env: { A: '1' } },
      {
        name: 'remote',
        transport: 'http',
        url: 'https://e.test/mcp',
        auth: { mode: 'none' },
        headers: { 'X-Team': 't' }
      },
      { name: 'cursor', transport: 'http', url: 'https://c.test/mcp', auth: { mode: 'none' } }
    ])
    const vscode = await parseConfigText(
      JSON.stringify({
        inputs: [{ type: 'promptString', id: 'gh-token', description: 'GitHub token', password: true }],
        servers: {
          github: { type: 'http', url: 'https://gh.test/mcp', headers: { Authorization: 'Bearer ${input:gh-token}' } },
          local: { type: 'stdio', command: 'node', args: ['${workspaceFolder}/s.js'] }
        }
      }),
      'file',
      null,
      { env: {}, secret: async (kind, id) => (kind === 'input' && id === 'gh-token' ? 'ghp_x' : undefined) }
    )
    expect(vscode.format).toBe('vscode')
    expect(vscode.entries[0]).toMatchObject({ ok: true, config: { headers: { Authorization: 'Bearer ghp_x' } } })
    expect(vscode.entries[1]).toMatchObject({
      ok: true,
      config: { transport: 'stdio', args: ['${workspaceFolder}/s.js'] }
    })
  })

  it('lists an invalid entry in error state while the others work; a broken file keeps the last good config', async () => {
    await writeApproved({
      servers: {
        good: stdio({ env: { WHO: 'good' } }),
        bad: { transport: 'http', url: 'not a url', auth: { mode: 'none' } }
      }
    })
    const mcp = await startHost()
    const bad = mcp.registry.describe('bad')
    expect(bad).toMatchObject({
      state: 'error',
      error: { code: 'invalid_config', path: ['servers', 'bad', 'url'], source: join(workspace, 'mcp.json') }
    })
    expect(textOf(await mcp.registry.callTool('good', 'env', { name: 'WHO' }))).toBe('good')
    await writeFile(join(workspace, 'mcp.json'), '{ "servers": { "good": ')
    await mcp.reload()
    expect(mcp.sources().find((source) => source.kind === 'workspace')).toMatchObject({
      state: 'error',
      error: expect.stringMatching(/is not valid JSON/)
    })
    expect(mcp.registry.describe('good').state).toBe('connected')
    await writeJson(join(workspace, 'mcp.json'), { servers: {}, extra: true })
    await mcp.reload()
    expect(mcp.sources().find((source) => source.kind === 'workspace')?.error).toBe(
      'unknown top-level field "extra" (expected "servers")'
    )
    expect(mcp.registry.list()).toEqual([])
  })

  it('layers the workspace mcp.json over settings.json and shows what it shadows', async () => {
    await writeJson(settingsFile, {
      theme: 'dark',
      mcp: { servers: { shared: stdio({ env: { FROM: 'settings' } }), onlySettings: stdio() } }
    })
    await writeApproved({ servers: { shared: stdio({ env: { FROM: 'workspace' } }) } })
    const mcp = await startHost()
    const shared = mcp.registry.describe('shared')
    expect(shared).toMatchObject({
      source: 'workspace',
      sourcePath: join(workspace, 'mcp.json'),
      shadows: [{ source: 'settings', path: settingsFile }]
    })
    expect(mcp.registry.describe('onlySettings')).toMatchObject({ source: 'settings', shadows: [] })
    expect(textOf(await mcp.registry.callTool('shared', 'env', { name: 'FROM' }))).toBe('workspace')
  })

  it('applies an edit on disk without a restart; an edit of the workspace file waits for a new approval', async () => {
    await writeJson(settingsFile, { mcp: { servers: { one: stdio() } } })
    await import('node:fs/promises').then((fs) => fs.mkdir(workspace))
    const mcp = await startHost({}, true)
    expect(mcp.registry.list().map((entry) => entry.name)).toEqual(['one'])
    await writeJson(settingsFile, { mcp: { servers: { one: stdio(), two: stdio({ env: { WHO: 'two' } }) } } })
    await waitFor('the watcher to apply the edit', () => mcp.registry.list().length === 2)
    expect(textOf(await mcp.registry.callTool('two', 'env', { name: 'WHO' }))).toBe('two')

    await writeApproved({ servers: { three: stdio({ env: { WHO: 'three' } }) } })
    await waitFor('the approved workspace file to apply', () => mcp.registry.list().length === 3)
    expect(mcp.registry.describe('three').state).toBe('idle')
    await writeJson(join(workspace, 'mcp.json'), { servers: { three: stdio({ env: { WHO: 'changed' } }) } })
    await waitFor('the edit to take the approval away', () => mcp.registry.describe('three').state === 'untrusted')
    expect(mcp.registry.describe('three').error?.message).toMatch(/which changed since you approved it \(\d{4}-/)
    expect(mcp.workspaceReview()).toMatchObject({ state: 'changed', servers: [{ name: 'three' }] })
    await mcp.approveWorkspace(mcp.workspaceReview()!.sha256)
    expect(textOf(await mcp.registry.callTool('three', 'env', { name: 'WHO' }))).toBe('changed')

    await rm(join(workspace, 'mcp.json'))
    await rm(settingsFile)
    await waitFor('the deletion to empty the registry', () => mcp.registry.list().length === 0)
  })

  it('saves from the UI atomically, keeping formatting and other keys, with typed secrets moved to the secret store', async () => {
    await import('node:fs/promises').then((fs) => fs.mkdir(join(dir, 'data'), { recursive: true }))
    await writeFile(settingsFile, '{\n\t"theme": "dark",\n\t"mcp": {\n\t\t"servers": {}\n\t}\n}\n')
    const mcp = await startHost()
    const saved = await mcp.save('api', {
      transport: 'http',
      url: 'http://127.0.0.1:9/mcp',
      auth: { mode: 'apiKey', key: 'sk-live-abcdef123456', valuePrefix: 'Bearer ' }
    })
    const text = await readFile(settingsFile, 'utf8')
    expect(text).not.toContain('sk-live-abcdef123456')
    expect(text).toContain('\t"theme": "dark"')
    expect(JSON.parse(text)).toEqual({
      theme: 'dark',
      mcp: {
        servers: {
          api: {
            transport: 'http',
            url: 'http://127.0.0.1:9/mcp',
            auth: { mode: 'apiKey', key: '${keychain:auth.key}', valuePrefix: 'Bearer ' }
          }
        }
      }
    })
    expect(await store.get(secretOf('api', { transport: 'http', url: 'http://127.0.0.1:9/mcp' }, 'auth.key'))).toBe(
      'sk-live-abcdef123456'
    )
    expect(saved.config).toMatchObject({ auth: { key: '${keychain:auth.key}' } })
    expect(JSON.stringify(mcp.registry.list())).not.toContain('sk-live')

    await mcp.save(
      'api2',
      { transport: 'http', url: 'http://127.0.0.1:9/v2', auth: { mode: 'apiKey', key: MASK, valuePrefix: 'Bearer ' } },
      'settings',
      'api'
    )
    expect(
      Object.keys((JSON.parse(await readFile(settingsFile, 'utf8')) as { mcp: { servers: object } }).mcp.servers)
    ).toEqual(['api2'])
    // renamed and given another URL by the person: the secret typed in goes with it
    const api2Secret = secretOf('api2', { transport: 'http', url: 'http://127.0.0.1:9/v2' }, 'auth.key')
    expect(await store.get(api2Secret)).toBe('sk-live-abcdef123456')
    expect(mcp.registry.describe('api2').error?.code).not.toBe('invalid_config')

    await expect(mcp.save('broken', { transport: 'http', url: 'nope', auth: { mode: 'none' } })).rejects.toMatchObject({
      code: 'invalid_config',
      extra: { path: ['mcp', 'servers', 'broken', 'url'] }
    })
    expect(await readFile(settingsFile, 'utf8')).not.toContain('broken')
    expect(await mcp.remove('api2')).toBe(true)
    expect(await store.get(api2Secret)).toBeUndefined()
  })
})

describe("importing other clients' files", () => {
  it('copies Claude Desktop and VS Code servers into settings.json; literal secrets go to the store; inputs get values later', async () => {
    await writeJson(settingsFile, { mcp: { servers: { taken: stdio() } } })
    const claude = join(dir, 'claude_desktop_config.json')
    await writeJson(claude, {
      mcpServers: {
        fx: { command: process.execPath, args: [FIXTURE], env: { API_TOKEN: 'ghp_literal_secret_123' } },
        taken: { command: 'x' }
      }
    })
    const vscode = join(dir, 'vscode-mcp.json')
    await writeJson(vscode, {
      inputs: [{ type: 'promptString', id: 'tok', password: true }],
      servers: {
        prompted: { type: 'stdio', command: process.execPath, args: [FIXTURE], env: { TOKEN: '${input:tok}' } }
      }
    })
    const mcp = await startHost()
    expect(await mcp.importFrom(claude)).toEqual({
      imported: ['fx'],
      skipped: [{ name: 'taken', reason: 'settings.json already has a server of this name' }]
    })
    expect(await mcp.importFrom(vscode)).toEqual({ imported: ['prompted'], skipped: [] })
    const settings = JSON.parse(await readFile(settingsFile, 'utf8')) as { mcp: { servers: Record<string, unknown> } }
    expect(settings.mcp.servers.fx).toEqual({
      transport: 'stdio',
      command: process.execPath,
      args: [FIXTURE],
      env: { API_TOKEN: '${keychain:env.API_TOKEN}' }
    })
    expect(JSON.stringify(settings)).not.toContain('ghp_literal_secret_123')
    expect(textOf(await mcp.registry.callTool('fx', 'env', { name: 'API_TOKEN' }))).toBe('ghp_literal_secret_123')
    expect(mcp.registry.describe('prompted')).toMatchObject({
      state: 'error',
      error: {
        message: "servers.prompted.env.TOKEN: ${input:tok}: the input 'tok' has no value".replace(
          'servers',
          'mcp.servers'
        )
      }
    })
    await mcp.setInput('tok', 'typed-by-a-person')
    expect(textOf(await mcp.registry.callTool('prompted', 'env', { name: 'TOKEN' }))).toBe('typed-by-a-person')
    await expect(mcp.importFrom(join(dir, 'missing.json'))).rejects.toMatchObject({ code: 'invalid_config' })
  })

  it('says which file could not be imported and why, never what it holds', async () => {
    const mcp = await startHost()
    const cases: Array<[string, string | null, RegExp]> = [
      ['shadow', 'root:$6$SECRETHASH0123456789:19000:0:99999:7:::\n', /is not valid JSON/],
      ['key.pem', '-----BEGIN PRIVATE KEY-----\nMIIEvSECRETKEYMATERIAL\n', /is not valid JSON/],
      ['almost.json', '{"mcpServers": {"x": SECRETBAREWORD}}', /is not valid JSON/],
      ['missing.json', null, /cannot be read \(ENOENT\)/]
    ]
    for (const [name, content, why] of cases) {
      const path = join(dir, name)
      if (content !== null) await writeFile(path, content)
      const error = (await mcp.importFrom(path).then(
        () => null,
        (failure: unknown) => failure
      )) as { code: string; message: string } | null
      expect(error?.code).toBe('invalid_config')
      expect(error?.message).toContain(path)
      expect(error?.message).toMatch(why)
      expect(error?.message).not.toMatch(/SECRET|root:|BEGIN/)
    }
  })
})

describe('sample configs in resources/mcp', () => {
  it('validate, given the variables they name', async () => {
    const root = resolve(__dirname, '../../resources/mcp')
    const env = { GITHUB_TOKEN: 'g', INTERNAL_CLIENT_ID: 'i', INTERNAL_CLIENT_SECRET: 's' }
    const workspaceSample = await parseConfigText(
      await readFile(join(root, 'mcp.example.json'), 'utf8'),
      'workspace',
      null,
      { env, secret: async () => undefined }
    )
    expect(workspaceSample.entries.filter((entry) => !entry.ok)).toEqual([])
    expect(workspaceSample.entries).toHaveLength(5)
    const settingsSample = await parseConfigText(
      await readFile(join(root, 'settings.example.json'), 'utf8'),
      'settings',
      null,
      { env, secret: async () => 'stored-key' }
    )
    expect(settingsSample.entries.map((entry) => entry.ok && entry.config.name)).toEqual(['notes', 'everything'])
  })
})
