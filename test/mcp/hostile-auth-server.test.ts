import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Registry } from '../../src/main/mcp/registry'
import { startMcpHttpServer, type RunningMcpHttpServer } from './support/mcp-http-server'
import { waitFor } from './support/processes'
import { startMcpCli } from './support/run-cli'

/** What the hostile authorisation server answers; changed per case. */
interface Hostility {
  /** `authorization_endpoint` of its metadata (null: it publishes no metadata at all). */
  authorizationEndpoint: string | null
  /** Which answer is a gzip bomb: a small body that inflates to 64 MiB. */
  bomb: 'metadata' | 'registration' | null
}

const INFLATED = 64 * 1024 * 1024

/** Valid JSON followed by 64 MiB of spaces, gzipped to about 64 KiB. */
function bombOf(value: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(value))
  return gzipSync(Buffer.concat([json, Buffer.alloc(INFLATED, ' ')]), { level: 9 })
}

/** An authorisation server that answers as an attacker would: any scheme as its authorisation endpoint, bombs. */
async function hostileAuthServer(hostility: Hostility): Promise<{ base: string; server: Server }> {
  const server = createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const send = (status: number, value: unknown, bomb: boolean) => {
      if (!bomb) {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(value))
        return
      }
      const body = bombOf(value)
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': body.length
      })
      res.end(body)
    }
    if (req.url === '/.well-known/oauth-authorization-server' && hostility.authorizationEndpoint !== null) {
      send(
        200,
        {
          issuer: base,
          authorization_endpoint: hostility.authorizationEndpoint,
          token_endpoint: `${base}/token`,
          registration_endpoint: `${base}/register`,
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256']
        },
        hostility.bomb === 'metadata'
      )
      return
    }
    if (req.url === '/register' && req.method === 'POST') {
      req.resume()
      send(
        201,
        { client_id: 'hostile-client', redirect_uris: ['http://127.0.0.1/oauth/callback/evil'] },
        hostility.bomb === 'registration'
      )
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

let dir: string
let hostility: Hostility
let authServer: { base: string; server: Server }
let resource: RunningMcpHttpServer
let registry: Registry | null = null

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-hostile-as-'))
  hostility = { authorizationEndpoint: null, bomb: null }
  authServer = await hostileAuthServer(hostility)
  // an honest MCP server whose protected resource metadata names the hostile authorisation server
  resource = await startMcpHttpServer({ kind: 'oauth', issuer: () => authServer.base })
})
afterEach(async () => {
  await registry?.close()
  registry = null
})
afterAll(async () => {
  await resource?.stop()
  await new Promise<void>((resolve) => authServer?.server.close(() => resolve()))
  await rm(dir, { recursive: true, force: true })
})

/** The app's registry with the one server; what it would have opened in the browser is kept. */
async function appRegistry(): Promise<{ registry: Registry; opened: string[] }> {
  const opened: string[] = []
  registry = new Registry({ openAuthorizeUrl: (url) => void opened.push(url) })
  await registry.addServer({ name: 'evil', transport: 'http', url: resource.url, auth: { mode: 'authorizationCode' } })
  return { registry, opened }
}

describe('authorisation URLs from a server’s metadata', () => {
  const refused = [
    'http://attacker.test/payload.exe',
    'file:///etc/passwd',
    'vscode://attacker.test/extension/install',
    'http://attacker.test/authorize'
  ]

  it('`syncscope mcp login` opens only https: (and http: on loopback) and refuses any other scheme at discovery, with the reason', async () => {
    // an OS opener that records what it is asked to open
    const bin = join(dir, 'bin')
    const record = join(dir, 'opened.txt')
    await mkdir(bin, { recursive: true })
    await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\necho "$@" >> ${record}\n`)
    await chmod(join(bin, 'xdg-open'), 0o755)
    const config = join(dir, 'mcp.json')
    await writeFile(
      config,
      JSON.stringify({
        servers: { evil: { transport: 'http', url: resource.url, auth: { mode: 'authorizationCode' } } }
      })
    )
    for (const endpoint of refused) {
      hostility.authorizationEndpoint = endpoint
      const login = startMcpCli(['login', 'evil', '--config', config, '--data-dir', join(dir, 'data')], {
        env: { PATH: `${bin}:${process.env.PATH ?? ''}` }
      })
      // the old behaviour: the opener runs, then the login waits for a callback that never comes
      await waitFor(
        `the login for ${endpoint} to end or open`,
        () => login.stdout() !== '' || existsSync(record) || login.stderr().includes('syncscope mcp:'),
        30_000
      )
      if (existsSync(record)) login.stop()
      const run = await login.exited
      expect(existsSync(record) ? await readFile(record, 'utf8') : 'nothing opened', endpoint).toBe('nothing opened')
      expect(run.code, endpoint).toBe(1)
      expect(run.stderr, endpoint).toContain(
        `syncscope mcp: auth_unavailable: evil: the authorisation server's metadata names the authorization_endpoint ${endpoint}: only https: URLs (and http: on loopback) are opened in the browser; refused`
      )
      expect(run.stderr).not.toContain('Open this URL')
    }
  }, 120_000)

  it('the app refuses them too, and never hands one to the browser; a loopback http: endpoint is opened', async () => {
    for (const endpoint of refused) {
      hostility.authorizationEndpoint = endpoint
      const { registry: app, opened } = await appRegistry()
      await expect(app.login('evil'), endpoint).rejects.toMatchObject({
        code: 'auth_unavailable',
        message: expect.stringContaining(`names the authorization_endpoint ${endpoint}`)
      })
      expect(opened).toEqual([])
      await app.close()
      registry = null
    }
    // a resource naming a plain-http authorisation server without metadata: the page would be its `/authorize`
    const plainServer = await startMcpHttpServer({ kind: 'oauth', issuer: () => 'http://attacker.test' })
    try {
      const opened: string[] = []
      registry = new Registry({ openAuthorizeUrl: (url) => void opened.push(url) })
      await registry.addServer({
        name: 'plain',
        transport: 'http',
        url: plainServer.url,
        auth: { mode: 'authorizationCode' }
      })
      await expect(registry.login('plain')).rejects.toMatchObject({
        code: 'auth_unavailable',
        message: expect.stringContaining('the resource names the authorisation server http://attacker.test')
      })
      expect(opened).toEqual([])
      await registry.close()
      registry = null
    } finally {
      await plainServer.stop()
    }

    hostility.authorizationEndpoint = `${authServer.base}/authorize`
    const { registry: app, opened } = await appRegistry()
    const { authorizeUrl } = await app.login('evil')
    expect(authorizeUrl.startsWith(`${authServer.base}/authorize?`)).toBe(true)
    expect(opened).toEqual([authorizeUrl])
  })
})

describe('compressed answers of an authorisation server', () => {
  it('are inflated only up to a cap, streamed, and refused with the cap named (metadata, registration)', async () => {
    hostility.authorizationEndpoint = `${authServer.base}/authorize`
    for (const bomb of ['metadata', 'registration'] as const) {
      hostility.bomb = bomb
      const { registry: app, opened } = await appRegistry()
      const heapBefore = process.memoryUsage().heapUsed
      const refusal = await app.login('evil').then(
        () => null,
        (error: unknown) => error as Error
      )
      expect(refusal?.message, bomb).toMatch(/larger than 1 MiB once decompressed: refused/)
      expect(opened).toEqual([])
      // nothing near the 64 MiB it inflates to was held
      expect(process.memoryUsage().heapUsed - heapBefore, bomb).toBeLessThan(INFLATED / 4)
      await app.close()
      registry = null
    }
    hostility.bomb = null
  })
})
