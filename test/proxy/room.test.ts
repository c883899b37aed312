import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp, type RunningApp } from '../../src/main/app'
import { ServeOptionsSchema } from '../../src/main/settings/serve-options'
import { findFreePort } from '../../src/main/net/free-port'
import { DEFAULT_CONFIG_FILE } from '../../src/main/proxy/room'
import { SIGNING_KEYS_FILE, type ProxyService } from '../../src/main/proxy/service'
import type { ProxyStatus, ProxyTryResult, UserToken } from '../../src/shared/contract/proxy'
import { UI_TOKEN_LIFETIME_SECONDS } from '../../src/main/proxy/user-token'
import { removeDataDir } from '../support/postgres'
import { DENNIS, GRACE, LINUS } from './support'

const SAMPLE = join(__dirname, '../../resources/proxy/sample-config.json')
let app: RunningApp
let dir: string
let configPath: string

async function call<T>(name: string, input: unknown = {}): Promise<T> {
  const result = await app.dispatch(name, input)
  if (!result.ok) throw new Error(`${name}: ${result.body.error.code}: ${result.body.error.message}`)
  return result.value as T
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-proxy-room-'))
  configPath = join(dir, 'proxy.json')
  const sample = JSON.parse(await readFile(SAMPLE, 'utf8')) as { upstream: Record<string, unknown> }
  await writeFile(
    configPath,
    JSON.stringify({ ...sample, upstream: { ...sample.upstream, secret: 'room-secret' } }, null, 2)
  )
  const serve = ServeOptionsSchema.parse({
    port: await findFreePort(),
    dataDir: dir,
    workspace: dir,
    proxyConfig: configPath,
    proxyPort: 0,
    secret: 'room-secret',
    ui: true
  })
  app = await startApp({ serve, rendererDir: null, log: () => {} })
})
afterAll(async () => {
  await app?.close()
  await removeDataDir(dir)
})

describe('the proxy room', () => {
  it('serves the proxy on its own port in front of the local shape server and announces it', async () => {
    const status = await call<Extract<ProxyStatus, { running: true }>>('proxy.status')
    expect(status.running).toBe(true)
    expect(app.describe()).toContain(
      `Proxy         ${status.url}  (/api/shapes/<name>, POST /gatekeeper/<table>, /proxy/v1/shape)`
    )
    expect(status.upstream).toEqual({ url: app.server.url, headerBrand: 'service', hasSecret: true })
    expect(status.users.map((user) => user.name)).toEqual(['Grace 1', 'Dennis 7', 'Linus 25', 'Visitor'])
  })

  it('calls the proxy as a user and shows the upstream request it built, never a token or the secret', async () => {
    const grace = await call<ProxyTryResult>('proxy.try', {
      userId: GRACE,
      target: { kind: 'shape', name: 'my-issues' }
    })
    expect(grace.shape?.status).toBe(200)
    expect(grace.rows?.length).toBeGreaterThan(0)
    expect(grace.rows?.every((row) => row.owner_id === GRACE)).toBe(true)
    expect(grace.accessClaims).toMatchObject({ sub: GRACE, roles: ['member'], iss: 'syncscope-local' })
    expect(grace.shape?.upstream?.serverParams).toEqual(['table', 'columns', 'where', 'params[1]', 'secret'])
    expect(JSON.stringify(grace)).not.toContain('room-secret')
    expect(JSON.stringify(grace)).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/)
    const gated = await call<ProxyTryResult>('proxy.try', {
      userId: LINUS,
      target: { kind: 'gatekeeper', table: 'projects', request: {} }
    })
    expect(gated.gatekeeper?.status).toBe(200)
    expect(gated.shape?.status).toBe(200)
    expect(gated.shapeClaims?.shape).toMatchObject({ table: 'public.projects', where: null })
    expect(gated.rows?.length).toBe(40)
    const anonymous = await call<ProxyTryResult>('proxy.try', {
      userId: null,
      target: { kind: 'shape', name: 'my-issues' }
    })
    expect(anonymous.shape?.status).toBe(401)
    expect(anonymous.shape?.explanation).toMatch(/No token was sent/)
    expect((await stat(join(dir, SIGNING_KEYS_FILE))).mode & 0o777).toBe(0o600)
  })

  it("mints short-lived access tokens for the config's test users only", async () => {
    const before = Math.floor(Date.now() / 1000)
    const { token, expiresAt } = await call<UserToken>('proxy.userToken', { userId: DENNIS })
    const service = app.rooms.proxy.service as ProxyService
    const caller = await service.tokens().verifyAccessToken(token)
    expect(caller).toMatchObject({ subject: DENNIS, roles: ['member'] })
    const { iat, exp } = decodeJwt(token)
    expect((exp ?? 0) - (iat ?? 0)).toBe(UI_TOKEN_LIFETIME_SECONDS)
    expect(iat).toBeGreaterThanOrEqual(before)
    expect(Date.parse(expiresAt)).toBe((exp ?? 0) * 1000)
    for (const userId of ['nobody', 'https://idp.test/|someone']) {
      const refused = await app.dispatch('proxy.userToken', { userId })
      expect(refused).toMatchObject({
        ok: false,
        status: 400,
        body: {
          error: {
            code: 'unknown_user',
            message: expect.stringContaining(`no test user "${userId}" in the proxy config`)
          }
        }
      })
    }
  })

  it("lets the app's own UI origin call the proxy from a browser, and no other", async () => {
    const status = await call<Extract<ProxyStatus, { running: true }>>('proxy.status')
    const uiOrigin = new URL(app.server.url).origin
    const preflight = await fetch(`${status.url}/api/shapes/my-issues?offset=-1`, {
      method: 'OPTIONS',
      headers: {
        origin: uiOrigin,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization'
      }
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(uiOrigin)
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization')
    const { token } = await call<UserToken>('proxy.userToken', { userId: GRACE })
    const answer = await fetch(`${status.url}/api/shapes/my-issues?offset=-1`, {
      headers: { origin: uiOrigin, authorization: `Bearer ${token}` }
    })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('access-control-allow-origin')).toBe(uiOrigin)
    expect(answer.headers.get('access-control-expose-headers')?.split(',')).toEqual(
      expect.arrayContaining(['vary', 'etag', 'service-handle'])
    )
    await answer.arrayBuffer()
    const grant = await fetch(`${status.url}/gatekeeper/issues`, {
      method: 'POST',
      headers: { origin: uiOrigin, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}'
    })
    expect(grant.status).toBe(200)
    expect(grant.headers.get('access-control-allow-origin')).toBe(uiOrigin)
    expect(grant.headers.get('vary')).toBe('Authorization, Origin')
    await grant.arrayBuffer()
    const stranger = await fetch(`${status.url}/api/shapes/my-issues?offset=-1`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.test', 'access-control-request-method': 'GET' }
    })
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('hands the config to the editor with the secret masked, and refuses a bad one with its issues', async () => {
    const { text } = await call<{ text: string }>('proxy.config')
    expect(text).not.toContain('room-secret')
    const saved = await call<ProxyStatus>('proxy.saveConfig', { text: text.replace('"Visitor"', '"Guest"') })
    expect(saved.running && saved.users.at(-1)?.name).toBe('Guest')
    expect(JSON.parse(await readFile(configPath, 'utf8')).upstream.secret).toBe('room-secret')
    const refused = await app.dispatch('proxy.saveConfig', { text: '{"shapes":{"x":{"table":"a.b.c"}}}' })
    expect(refused.ok).toBe(false)
    if (!refused.ok) {
      expect(refused.status).toBe(400)
      expect(refused.body.error.code).toBe('invalid_config')
      expect(refused.body.error.details?.issues).toEqual([
        { path: ['shapes', 'x', 'table'], message: expect.stringContaining('too many delimiters') }
      ])
    }
  })
})

describe('without --proxy-config', () => {
  it('says how to start the proxy, and starts it from proxy.json in the data folder, created from the sample', async () => {
    const other = await mkdtemp(join(tmpdir(), 'syncscope-proxy-start-'))
    const serve = ServeOptionsSchema.parse({
      port: await findFreePort(),
      dataDir: other,
      workspace: other,
      proxyPort: await findFreePort()
    })
    const second = await startApp({ serve, rendererDir: null, log: () => {} })
    try {
      const before = await second.dispatch('proxy.status', {})
      expect(before).toEqual({
        ok: true,
        value: {
          running: false,
          reason: expect.stringContaining('--proxy-config FILE'),
          configPath: join(other, DEFAULT_CONFIG_FILE)
        }
      })
      expect(second.describe().some((line) => line.startsWith('Proxy'))).toBe(false)
      const started = await second.dispatch('proxy.start', {})
      expect(started.ok && (started.value as ProxyStatus).running).toBe(true)
      expect(await readFile(join(other, DEFAULT_CONFIG_FILE), 'utf8')).toBe(await readFile(SAMPLE, 'utf8'))
      const tried = await second.dispatch('proxy.try', {
        userId: GRACE,
        target: { kind: 'shape', name: 'my-settings' }
      })
      expect(tried.ok && (tried.value as ProxyTryResult).rows).toEqual([expect.objectContaining({ userId: GRACE })])
    } finally {
      await second.close()
      await removeDataDir(other)
    }
  })
})
