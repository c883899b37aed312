import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT, type JWTPayload } from 'jose'
import type { ProxyUser } from '../../src/main/proxy/config'
import type { GatekeeperGrant } from '../../src/shared/shape-client'
import { SIGNING_KEYS_FILE, startProxyService, type ProxyService } from '../../src/main/proxy/service'
import { SigningKeys } from '../../src/main/proxy/signing-keys'
import { startTestShapeServer, type TestShapeServer, type TestShapeServerOptions } from '../support/shape-server'

/** Demo users (md5('user' || i)::uuid of the seed) and their roles. */
export const GRACE = '24c9e15e-52af-c47c-225b-757e7bee1f9d'
export const DENNIS = '3e0469fb-1349-91f8-f75a-2760e409c6ed'
export const LINUS = '0f8f84c1-8bfd-5244-ed97-6f63924a8a0e'

export const USERS = [
  { id: GRACE, name: 'Grace 1', roles: ['member'] },
  { id: DENNIS, name: 'Dennis 7', roles: ['member'] },
  { id: LINUS, name: 'Linus 25', roles: ['member', 'admin'] },
  { id: 'visitor', name: 'Visitor', roles: [] }
]

export const SHAPES = {
  'my-issues': {
    table: 'issues',
    columns: ['id', 'owner_id', 'title', 'priority'],
    rowFilter: { where: 'owner_id = $1', params: ['sub'] },
    roles: ['member'],
    privilegedRoles: ['admin']
  },
  'my-settings': {
    table: '"UserSettings"',
    columns: ['"userId"', '"pageSize"'],
    rowFilter: { where: '"userId" = $1', params: ['sub'] }
  }
}

export const GATEKEEPER = {
  tables: {
    issues: {
      roles: ['member'],
      columns: ['id', 'owner_id', 'title', 'priority', 'status'],
      queryableColumns: ['id', 'owner_id', 'title', 'priority', 'status'],
      rowFilter: { where: 'owner_id = $1', params: ['sub'] },
      privilegedRoles: ['admin']
    },
    comments: { roles: ['member'] }
  }
}

export interface ProxyStack {
  shapes: TestShapeServer
  proxy: ProxyService
  configPath: string
  dir: string
  keys: SigningKeys
  accessToken(userId: string): Promise<string>
  /** Signs any payload with the proxy's own key (for expired, future or wrongly addressed tokens). */
  sign(payload: JWTPayload, header?: Record<string, unknown>): Promise<string>
  /** Rewrites the first proxy's config file. */
  writeConfig(config: object): Promise<void>
  /** Another proxy with a config file of its own, in front of the same shape server. */
  startProxy(config: object): Promise<ProxyService>
  close(): Promise<void>
}

/** The test config in front of `shapes`; `extra` replaces top-level sections, except `upstream`, whose fields it adds. */
export function configFor(shapes: TestShapeServer, extra: Record<string, unknown> = {}, secret?: string): object {
  const upstream = { url: shapes.url, ...(secret ? { secret } : {}), ...(extra.upstream as object | undefined) }
  return { users: USERS, shapes: SHAPES, gatekeeper: GATEKEEPER, ...extra, upstream }
}

/** A real shape server (embedded Postgres with the demo data) and a proxy in front of it, both on loopback. */
export async function startProxyStack(
  options: TestShapeServerOptions & { config?: Record<string, unknown> } = {}
): Promise<ProxyStack> {
  const shapes = await startTestShapeServer(options)
  const dir = await mkdtemp(join(tmpdir(), 'syncscope-proxy-'))
  const configPath = join(dir, 'proxy.json')
  const keys = new SigningKeys(join(dir, SIGNING_KEYS_FILE))
  const proxies: ProxyService[] = []
  const writeConfig = (config: object) => writeFile(configPath, JSON.stringify(config, null, 2))
  const startProxy = async (config: object) => {
    const file = proxies.length === 0 ? configPath : join(dir, `proxy-${proxies.length}.json`)
    await writeFile(file, JSON.stringify(config, null, 2))
    const proxy = await startProxyService({
      configPath: file,
      dataDir: dir,
      host: '127.0.0.1',
      port: 0,
      localShapeUrl: () => null,
      localHeaderBrand: options.headerBrand ?? 'service',
      log: () => {}
    })
    proxies.push(proxy)
    return proxy
  }
  const proxy = await startProxy(configFor(shapes, options.config, options.secret))
  return {
    shapes,
    proxy,
    configPath,
    dir,
    keys,
    writeConfig,
    startProxy,
    async accessToken(userId) {
      const user = proxy.config.loaded.config.users.find((candidate) => candidate.id === userId) as ProxyUser
      return proxy.tokens().mintAccessToken(user)
    },
    async sign(payload, header = {}) {
      const key = await keys.key('ES256')
      return new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: key.kid, ...header }).sign(key.privateKey)
    },
    async close() {
      for (const started of proxies) await started.close()
      await shapes.close()
      await rm(dir, { recursive: true, force: true })
    }
  }
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

export interface ChangeMessage {
  key?: string
  value?: Record<string, string | null>
  headers: Record<string, unknown>
}

export async function messages(response: Response): Promise<ChangeMessage[]> {
  return (await response.json()) as ChangeMessage[]
}

export const rowsOf = (list: ChangeMessage[]) =>
  list.filter((message) => message.value !== undefined).map((message) => message.value as Record<string, string | null>)

/** What the gatekeeper answers: stream options for a shape client (its Authorization header always there). */
export type GatekeeperConfig = GatekeeperGrant & { headers: { Authorization: string } }

export function askGatekeeper(
  stack: ProxyStack,
  table: string,
  body: unknown,
  token: string | null
): Promise<Response> {
  return fetch(`${stack.proxy.url}/gatekeeper/${table}`, {
    method: 'POST',
    headers: { ...(token ? bearer(token) : {}), 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
}

/** The gatekeeper's answer for a user, which must be a grant. */
export async function grant(
  stack: ProxyStack,
  userId: string,
  body: unknown = {},
  table = 'issues'
): Promise<GatekeeperConfig> {
  const response = await askGatekeeper(stack, table, body, await stack.accessToken(userId))
  if (response.status !== 200) throw new Error(`the gatekeeper refused: ${response.status} ${await response.text()}`)
  return (await response.json()) as GatekeeperConfig
}

export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
