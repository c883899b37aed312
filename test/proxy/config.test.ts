import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parseProxyConfig, ProxyConfigError } from '../../src/main/proxy/config'
import { maskSecret, restoreSecret, SECRET_MASK } from '../../src/main/proxy/config-text'

const SAMPLE = join(__dirname, '../../resources/proxy/sample-config.json')

async function issuesOf(text: string, options: Parameters<typeof parseProxyConfig>[1] = {}) {
  try {
    await parseProxyConfig(text, options)
  } catch (error) {
    if (error instanceof ProxyConfigError)
      return error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`)
    throw error
  }
  return []
}

describe('proxy config', () => {
  it('reads the sample config shipped for the demo schema', async () => {
    const loaded = await parseProxyConfig(await readFile(SAMPLE, 'utf8'))
    expect([...loaded.shapes.keys()]).toEqual(['my-issues', 'my-projects', 'my-settings', 'people'])
    expect(loaded.shapes.get('my-settings')?.shape).toMatchObject({
      schema: 'public',
      name: 'UserSettings',
      columns: ['Locale', 'darkMode', 'pageSize', 'userId']
    })
    expect(loaded.tables.size).toBe(3)
    expect(loaded.config.gatekeeper.algorithm).toBe('ES256')
  })

  it('names every problem with its path', async () => {
    expect(await issuesOf('{ nope')).toEqual([expect.stringMatching(/^: not valid JSON/)])
    expect(await issuesOf('{"upstream":{"url":"ftp://x"},"extra":1}')).toEqual(
      expect.arrayContaining([expect.stringMatching(/^upstream\.url: /), expect.stringMatching(/extra/)])
    )
    expect(
      await issuesOf(
        JSON.stringify({
          shapes: {
            a: { table: 'a.b.c' },
            b: { table: 'issues', rowFilter: { where: 'owner_id = $1' } },
            c: { table: 'issues', rowFilter: { where: 'x = 1) OR (1 = 1' } }
          },
          gatekeeper: { tables: { issues: {}, ISSUES: {} } },
          users: [
            { id: 'u', name: 'A' },
            { id: 'u', name: 'B' }
          ]
        })
      )
    ).toEqual([
      expect.stringMatching(/^shapes\.a\.table: .*too many delimiters/),
      expect.stringMatching(/^shapes\.b\.rowFilter\.params: where uses \$1/),
      expect.stringMatching(/^shapes\.c\.rowFilter\.where: /),
      'gatekeeper.tables.ISSUES: ISSUES names a table that already has a policy',
      'users.1.id: user id u is used twice'
    ])
  })

  it('masks the upstream secret for the editor and keeps it when the mask comes back', () => {
    const text = JSON.stringify({ upstream: { url: 'http://127.0.0.1:1', secret: 's3cret' } })
    const masked = maskSecret(text)
    expect(masked).not.toContain('s3cret')
    expect(masked).toContain(SECRET_MASK)
    expect(JSON.parse(restoreSecret(masked, 's3cret')).upstream.secret).toBe('s3cret')
    expect(JSON.parse(restoreSecret(masked.replace(SECRET_MASK, 'other'), 's3cret')).upstream.secret).toBe('other')
  })
})

describe('the upstream secret, kept out of the config file', () => {
  const folders: string[] = []
  afterAll(() => Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true }))))

  async function secretFile(mode: number): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'syncscope-proxy-secret-'))
    folders.push(dir)
    await writeFile(join(dir, 'upstream.secret'), 'from-a-file\n')
    await chmod(join(dir, 'upstream.secret'), mode)
    return dir
  }
  const upstream = (fields: Record<string, string>) =>
    JSON.stringify({ upstream: { url: 'http://127.0.0.1:1', ...fields } })

  it('reads secretFile (relative to the config file) when only its owner can read it', async () => {
    const dir = await secretFile(0o600)
    const loaded = await parseProxyConfig(upstream({ secretFile: 'upstream.secret' }), { dir })
    expect(loaded.config.upstream.secret).toBe('from-a-file')
  })

  it('refuses a secretFile other users can read, in one line with the fix', async () => {
    const dir = await secretFile(0o644)
    expect(await issuesOf(upstream({ secretFile: 'upstream.secret' }), { dir })).toEqual([
      expect.stringMatching(/^upstream\.secretFile: .*can be read by other users \(mode 0644\): run chmod 600 /)
    ])
  })

  it('reads secretEnv from the environment, and names it when unset', async () => {
    const loaded = await parseProxyConfig(upstream({ secretEnv: 'UPSTREAM_SECRET' }), {
      env: { UPSTREAM_SECRET: 'from-env' }
    })
    expect(loaded.config.upstream.secret).toBe('from-env')
    expect(await issuesOf(upstream({ secretEnv: 'UPSTREAM_SECRET' }), { env: {} })).toEqual([
      'upstream.secretEnv: the environment variable UPSTREAM_SECRET is not set'
    ])
  })

  it('takes one of secret, secretFile and secretEnv', async () => {
    expect(await issuesOf(upstream({ secret: 'a', secretEnv: 'B' }), { env: { B: 'b' } })).toEqual([
      expect.stringMatching(/^upstream: give one of secret, secretFile, secretEnv/)
    ])
  })
})
