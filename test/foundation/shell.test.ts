import { createServer, type Server } from 'node:http'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { contentSecurityPolicy } from '../../src/main/csp'
import { serveStatic } from '../../src/main/headless/static-files'
import { shellFolders } from '../../src/main/shell-settings'

const dir = mkdtempSync(join(tmpdir(), 'syncscope-shell-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function dataDirWith(name: string, settings: string | null): string {
  const dataDir = join(dir, name)
  mkdirSync(dataDir, { recursive: true })
  if (settings !== null) writeFileSync(join(dataDir, 'settings.json'), settings)
  return dataDir
}

describe('shellFolders (the desktop app’s data and workspace folders)', () => {
  test('without settings.json: the default data folder and the home folder (a dock-started app runs in /)', () => {
    const dataDir = dataDirWith('none', null)
    expect(shellFolders(dataDir, '/home/ada')).toEqual({ dataDir, workspace: '/home/ada' })
  })

  test('settings.json names both, beside keys of other rooms', () => {
    const dataDir = dataDirWith(
      'set',
      JSON.stringify({ dataDir: '/srv/syncscope', workspace: '/work/app', mcp: { servers: {} } })
    )
    expect(shellFolders(dataDir, '/home/ada')).toEqual({ dataDir: '/srv/syncscope', workspace: '/work/app' })
  })

  test('a relative folder or a damaged file is refused with the file and the fix, never ignored', () => {
    const relative = dataDirWith('relative', JSON.stringify({ workspace: 'projects/app' }))
    expect(() => shellFolders(relative)).toThrow(
      /settings\.json: workspace: workspace must be an absolute path: fix it or remove the key/
    )
    const damaged = dataDirWith('damaged', '{"dataDir": "/srv')
    expect(() => shellFolders(damaged)).toThrow(/settings\.json is not valid JSON: fix it or remove it/)
  })
})

describe('contentSecurityPolicy (one policy for the Electron window and the browser mode)', () => {
  const directives = new Map(
    contentSecurityPolicy()
      .split('; ')
      .map((directive) => [directive.split(' ')[0], directive.split(' ').slice(1)])
  )

  test('scripts only from the app: no inline script, no eval', () => {
    expect(directives.get('script-src')).toEqual(["'self'"])
    expect(directives.get('object-src')).toEqual(["'none'"])
    expect(directives.get('frame-ancestors')).toEqual(["'none'"])
  })

  test('workers only from the app’s own files (the Shape workbench’s worker): no blob: or data: workers', () => {
    expect(directives.get('worker-src')).toEqual(["'self'"])
  })

  test('the <meta> policy of the built page is the same but for frame-ancestors, which a meta policy cannot carry', () => {
    expect(contentSecurityPolicy('meta')).toBe(contentSecurityPolicy().replace("; frame-ancestors 'none'", ''))
  })

  test('connections reach any shape service the person names (remote, proxy, another local port)', () => {
    expect(directives.get('connect-src')).toEqual(["'self'", 'http:', 'https:'])
  })

  test('the headless shell sends it with the UI page and the worker script (its own policy), and only there', async () => {
    const rendererDir = dataDirWith('renderer', null)
    writeFileSync(join(rendererDir, 'index.html'), '<!doctype html>')
    writeFileSync(join(rendererDir, 'app.js'), '')
    mkdirSync(join(rendererDir, 'assets'))
    writeFileSync(join(rendererDir, 'assets', 'worker-B1x_9z.js'), '')
    const server: Server = createServer((req, res) => void serveStatic(rendererDir, req.url ?? '/', res))
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
    try {
      expect((await fetch(`${base}/`)).headers.get('content-security-policy')).toBe(contentSecurityPolicy())
      expect((await fetch(`${base}/#/shapes`)).headers.get('content-security-policy')).toBe(contentSecurityPolicy())
      expect((await fetch(`${base}/app.js`)).headers.get('content-security-policy')).toBeNull()
      expect((await fetch(`${base}/assets/worker-B1x_9z.js`)).headers.get('content-security-policy')).toBe(
        contentSecurityPolicy()
      )
    } finally {
      server.close()
    }
  })
})
