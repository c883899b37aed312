import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import type { ProxyStatus } from '../../shared/contract/proxy'
import { resourcePath } from '../resources'
import type { RoomContext } from '../rooms'
import { tableText } from './shape-definition'
import { startProxyService, type ProxyService } from './service'

export interface ProxyRoom {
  /** Null until the proxy runs: at start-up with --proxy-config, or when `start()` is asked for. */
  readonly service: ProxyService | null
  status(): ProxyStatus
  /** Starts the proxy from --proxy-config, or from `proxy.json` in the data folder (created from the sample). */
  start(): Promise<ProxyService>
}

export const DEFAULT_CONFIG_FILE = 'proxy.json'
const SAMPLE_CONFIG = 'proxy/sample-config.json'

export function proxyStatus(service: ProxyService | null, configPath: string): ProxyStatus {
  if (!service) {
    return {
      running: false,
      reason: `the proxy is not running: start it with ${configPath}, or start the app with --proxy-config FILE`,
      configPath
    }
  }
  const { config } = service.config.loaded
  const status = service.config.status()
  const target = service.target()
  return {
    running: true,
    url: service.url,
    configPath: status.path,
    loadedAt: status.loadedAt,
    reloadError: status.error,
    upstream: { url: target.baseUrl, headerBrand: target.headerBrand, hasSecret: target.secret !== undefined },
    users: config.users.map(({ id, name, roles }) => ({ id, name, roles })),
    shapes: [...service.config.loaded.shapes].map(([name, entry]) => ({
      name,
      table: tableText(entry.shape),
      where: entry.shape.where,
      roles: entry.config.roles ?? null
    })),
    gatekeeperTables: Object.keys(config.gatekeeper.tables)
  }
}

/**
 * Where the app's own UI runs, so the Shape workbench may call the proxy from the page: the headless UI is served by
 * the app server; the Electron shell loads file pages, whose requests carry `Origin: null`. Allowing them gives no
 * page more than its own credentials buy: the proxy never sends Access-Control-Allow-Credentials.
 */
function appOrigins(context: RoomContext): string[] {
  if (context.serve.ui) return context.serverUrl ? [new URL(context.serverUrl).origin] : []
  return process.versions.electron ? ['null'] : []
}

/** proxy.json from the sample, private like every file of the data folder (a copy would take the sample's 0644). */
async function ensureConfigFile(path: string): Promise<void> {
  const exists = await stat(path).then(
    () => true,
    () => false
  )
  if (exists) return
  await mkdir(dirname(path), { recursive: true, mode: 0o700 })
  const sample = await readFile(resourcePath(SAMPLE_CONFIG))
  await writeFile(path, sample, { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error
  })
}

/** The authorising proxy on its own port: started with the app when given --proxy-config, else on request. */
export async function startProxyRoom(context: RoomContext): Promise<ProxyRoom> {
  const { serve, events, log } = context
  const configPath = serve.proxyConfig ? resolve(serve.proxyConfig) : join(serve.dataDir, DEFAULT_CONFIG_FILE)
  let service: ProxyService | null = null
  let starting: Promise<ProxyService> | null = null

  async function launch(): Promise<ProxyService> {
    if (!serve.proxyConfig) await ensureConfigFile(configPath)
    const started = await startProxyService({
      configPath,
      dataDir: serve.dataDir,
      host: serve.host,
      allowedHosts: serve.allowedHosts,
      port: serve.proxyPort,
      maxConnections: serve.maxConnections,
      localShapeUrl: () => context.serverUrl,
      localHeaderBrand: serve.headerBrand,
      appOrigins: () => appOrigins(context),
      log,
      onExchange: (exchange) => events.emit('proxy.exchange', exchange),
      onConfigChange: (ok) => events.emit('proxy.config', { ok })
    })
    context.onClose.push(() => started.close())
    service = started
    return started
  }

  const room: ProxyRoom = {
    get service() {
      return service
    },
    status: () => proxyStatus(service, configPath),
    start() {
      starting ??= launch().catch((error: unknown) => {
        starting = null
        throw error
      })
      return starting
    }
  }
  if (serve.proxyConfig) {
    const started = await room.start()
    context.banner.push(`Proxy         ${started.url}  (/api/shapes/<name>, POST /gatekeeper/<table>, /proxy/v1/shape)`)
  }
  return room
}
