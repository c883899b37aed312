import { join } from 'node:path'
import { PROXY_EXCHANGES_KEPT } from '../../shared/contract/proxy'
import { DEFAULT_HEADER_BRAND, type HeaderBrand } from '../../shared/protocol'
import type { LoadedConfig } from './config'
import { ProxyConfigFile } from './config-file'
import { createProxyHandler, type ProxyExchange, type ProxyHandler, type ProxyRuntime } from './handler'
import { serveFetchHandler, type NodeFetchServer } from './node-server'
import { SigningKeys } from './signing-keys'
import { TokenService } from './tokens'
import type { UpstreamTarget } from './upstream'

export interface ProxyServiceOptions {
  configPath: string
  /** The app data folder: the local signing keys live in it. */
  dataDir: string
  host: string
  /** Host names accepted besides loopback and `host` (`--allowed-host`). */
  allowedHosts?: readonly string[]
  port: number
  /** Open connections served at once (`--max-connections`). */
  maxConnections?: number
  /** Base URL of this app's shape server, for `"upstream": {"url": "local"}`; null when it is not known. */
  /** The local shape server's URL, null until it listens. */
  localShapeUrl: () => string | null
  localHeaderBrand: HeaderBrand
  /** Origins of the app's own UI, which may always call the proxy from the browser (e.g. the Shape workbench). */
  appOrigins?: () => string[]
  log: (line: string) => void
  onExchange?: (exchange: ProxyExchange) => void
  /** After every reload attempt: whether the file was good (and is now in force). */
  onConfigChange?: (ok: boolean) => void
}

export interface ProxyService {
  readonly url: string
  readonly config: ProxyConfigFile
  readonly tokens: () => TokenService
  readonly target: () => UpstreamTarget
  readonly handler: ProxyHandler
  /** The latest exchanges, newest last. */
  exchanges(): ProxyExchange[]
  close(): Promise<void>
}

export const SIGNING_KEYS_FILE = 'proxy-signing-keys.json'

/** Starts the proxy on its own port from a config file that is reloaded on every change. */
export async function startProxyService(options: ProxyServiceOptions): Promise<ProxyService> {
  const keys = new SigningKeys(join(options.dataDir, SIGNING_KEYS_FILE))
  const exchanges: ProxyExchange[] = []
  let server: NodeFetchServer | null = null
  let runtime: ProxyRuntime | null = null

  const build = (loaded: LoadedConfig): ProxyRuntime => {
    const { upstream, gatekeeper } = loaded.config
    const isLocal = upstream.url === 'local'
    return {
      loaded,
      tokens: new TokenService({ config: loaded.config, keys }),
      target: {
        // read per request: the local server's address is known only once it listens
        get baseUrl() {
          return isLocal ? options.localShapeUrl() : upstream.url
        },
        secret: upstream.secret,
        params: upstream.params,
        headerBrand: upstream.headerBrand ?? (isLocal ? options.localHeaderBrand : DEFAULT_HEADER_BRAND)
      },
      publicUrl: gatekeeper.proxyUrl ?? server?.url ?? '',
      appOrigins: options.appOrigins ?? (() => [])
    }
  }

  const config = await ProxyConfigFile.open(
    options.configPath,
    (loaded) => {
      runtime = build(loaded)
      options.onConfigChange?.(true)
    },
    options.log,
    () => options.onConfigChange?.(false)
  )
  runtime = build(config.loaded)
  const current = () => runtime as ProxyRuntime
  const handler = createProxyHandler(current, (exchange) => {
    exchanges.push(exchange)
    if (exchanges.length > PROXY_EXCHANGES_KEPT) exchanges.shift()
    options.onExchange?.(exchange)
  })
  try {
    server = await serveFetchHandler(handler, {
      host: options.host,
      allowedHosts: options.allowedHosts,
      port: options.port,
      maxConnections: options.maxConnections,
      log: options.log
    })
  } catch (error) {
    config.close()
    throw new Error(`the proxy cannot listen on ${options.host}:${options.port}: ${(error as Error).message}`, {
      cause: error
    })
  }
  // built again now that the port is known: the gatekeeper hands out the proxy's own URL
  runtime = build(config.loaded)
  const listening = server
  return {
    url: listening.url,
    config,
    tokens: () => current().tokens,
    target: () => current().target,
    handler,
    exchanges: () => [...exchanges],
    async close() {
      config.close()
      await listening.close()
    }
  }
}
