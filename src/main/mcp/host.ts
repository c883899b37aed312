import { watch, type FSWatcher } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type {
  ClientMetadataSetting,
  McpEntry,
  McpServerConfig,
  McpSource,
  OAuthExchange
} from '../../shared/contract/mcp'
import type { ExpandContext } from './config/expand'
import { jsonSyntaxProblem, objectAt, putEntry, updateJsonFile } from './config/json-file'
import {
  importForeignEntry,
  parseConfigText,
  parseEntry,
  type ParsedEntry,
  type ParsedFile,
  type SourceKind
} from './config/parse'
import type { TokenRecord } from './auth/refresh-coordinator'
import type { RestartPolicy } from './connection'
import { McpFailure } from './errors'
import { isLiteralSecret, MASK } from './mask'
import { withLockFile } from './persistence/lock-file'
import { forgetPersisted, readStoredTokens, storePersistence } from './persistence/oauth-persistence'
import type { SecretStore } from './persistence/secret-store'
import { Registry, type InvalidEntry, type Origin, type RegistryOptions } from './registry'

export interface McpHostOptions {
  /** The workspace folder; its `mcp.json` wins over settings.json. */
  workspace: string | null
  /** The desktop settings file (`mcp.servers`). */
  settingsFile: string | null
  /** One file instead of both layers (`syncscope mcp … --config FILE`). */
  configFile?: string
  secretStore: SecretStore
  env?: NodeJS.ProcessEnv
  /** Re-read the files when they change on disk. */
  watch?: boolean
  openAuthorizeUrl?: (url: string, server: string) => void | Promise<void>
  extraMcpServers?: McpServerConfig[]
  oauthProviders?: ReadonlyMap<string, OAuthClientProvider>
  restartPolicy?: RestartPolicy
  /** Start-up and reloads do not wait for HTTP servers to answer; their rows update as they do. */
  connectInBackground?: boolean
  connectOnDemand?: boolean
  onChange?: (names: string[]) => void
  onOAuthExchange?: (server: string, exchange: OAuthExchange) => void
  onRpcMessage?: RegistryOptions['onRpcMessage']
  onElicitation?: RegistryOptions['onElicitation']
  /** The app's client ID metadata document URL (see Registry); given, it wins over settings.json's `mcp.clientMetadataUrl`. */
  clientMetadataUrl?: string
  /** Where the lock files that coordinate token refreshes with other processes go (default: beside settings.json). */
  lockDir?: string
  log?: (line: string) => void
}

interface Layer {
  kind: SourceKind
  path: string
  /** The last readable contents: a broken file keeps serving these. */
  parsed: ParsedFile | null
  source: McpSource
}

export type SaveTarget = 'settings' | 'workspace'

const secretAccount = (server: string, field: string) => `secret:${server}:${field}`
const KEYCHAIN_PLACEHOLDER = /\$\{keychain:([^}]+)\}/g

/**
 * The MCP room: config files layered (settings.json below the workspace mcp.json), watched, and applied to one
 * Registry; OAuth tokens and typed-in secrets kept in the secret store.
 */
export class McpHost {
  readonly registry: Registry
  private readonly layers: Layer[]
  private readonly watchers: FSWatcher[] = []
  private reloading: Promise<void> | null = null
  private reloadAgain = false
  private debounce: NodeJS.Timeout | null = null

  constructor(private readonly options: McpHostOptions) {
    this.layers = this.layerFiles().map(({ kind, path }) => ({
      kind,
      path,
      parsed: null,
      source: { kind, path, format: null, state: 'missing', error: null }
    }))
    this.registry = new Registry({
      workspaceRoot: options.workspace ?? process.cwd(),
      ...(options.openAuthorizeUrl ? { openAuthorizeUrl: options.openAuthorizeUrl } : {}),
      ...(options.extraMcpServers ? { extraMcpServers: options.extraMcpServers } : {}),
      ...(options.oauthProviders ? { oauthProviders: options.oauthProviders } : {}),
      ...(options.restartPolicy ? { restartPolicy: options.restartPolicy } : {}),
      ...(options.connectInBackground ? { connectInBackground: true } : {}),
      ...(options.connectOnDemand ? { connectOnDemand: true } : {}),
      ...(options.onChange ? { onChange: options.onChange } : {}),
      ...(options.onOAuthExchange ? { onOAuthExchange: options.onOAuthExchange } : {}),
      ...(options.onRpcMessage ? { onRpcMessage: options.onRpcMessage } : {}),
      ...(options.onElicitation ? { onElicitation: options.onElicitation } : {}),
      tokenRecord: (server) => this.tokenRecord(server),
      onLogout: (server) =>
        forgetPersisted(options.secretStore, server, { client: false }).catch((error: unknown) =>
          this.warn(`could not delete the tokens of ${server}: ${(error as Error).message}`)
        )
    })
  }

  /** The persisted tokens of a server and the lock file every Syncscope process takes before refreshing them. */
  private tokenRecord(server: string): TokenRecord | null {
    const lockDir = this.options.lockDir ?? (this.options.settingsFile ? dirname(this.options.settingsFile) : null)
    if (!lockDir) return null
    const store = this.options.secretStore
    return {
      read: () => readStoredTokens(store, server),
      locked: (work) => withLockFile(join(lockDir, `mcp-tokens-${server}.lock`), work)
    }
  }

  private layerFiles(): Array<{ kind: SourceKind; path: string }> {
    const { configFile, settingsFile, workspace } = this.options
    if (configFile) return [{ kind: 'file', path: configFile }]
    return [
      ...(settingsFile ? [{ kind: 'settings' as const, path: settingsFile }] : []),
      ...(workspace ? [{ kind: 'workspace' as const, path: join(workspace, 'mcp.json') }] : [])
    ]
  }

  async start(): Promise<void> {
    await this.reload()
    if (!this.options.watch) return
    // The data folder may not exist yet on a first start; watching it from now on catches a settings.json written later.
    for (const layer of this.layers)
      if (layer.kind === 'settings') await mkdir(dirname(layer.path), { recursive: true })
    for (const layer of this.layers) this.watchLayer(layer)
  }

  /** The one file read instead of the layers (`--config`), if any. */
  get configFile(): string | undefined {
    return this.options.configFile
  }

  sources(): McpSource[] {
    return this.layers.map((layer) => layer.source)
  }

  get secretStore(): SecretStore {
    return this.options.secretStore
  }

  /** Reads every layer and applies the result; overlapping calls collapse into one more pass. */
  reload(): Promise<void> {
    if (this.reloading) {
      this.reloadAgain = true
      return this.reloading
    }
    this.reloading = (async () => {
      do {
        this.reloadAgain = false
        await this.readAndApply()
      } while (this.reloadAgain)
    })().finally(() => (this.reloading = null))
    return this.reloading
  }

  private expandContext(): ExpandContext {
    const store = this.options.secretStore
    return {
      env: this.options.env ?? process.env,
      secret: (kind, id) => {
        if (kind === 'input') return store.get(`input:${id}`)
        const [server, ...field] = id.split(':')
        return store.get(secretAccount(server ?? '', field.join(':')))
      }
    }
  }

  private async readLayer(layer: Layer): Promise<void> {
    let text: string
    try {
      text = await readFile(layer.path, 'utf8')
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT'
      layer.parsed = missing ? null : layer.parsed
      layer.source = {
        ...layer.source,
        format: null,
        state: missing ? 'missing' : 'error',
        error: missing ? null : (error as Error).message
      }
      return
    }
    const parsed = await parseConfigText(text, layer.kind, layer.path, this.expandContext())
    const unreadable = parsed.format === null && parsed.error !== null
    if (!unreadable) layer.parsed = parsed
    layer.source = {
      kind: layer.kind,
      path: layer.path,
      format: parsed.format ?? layer.parsed?.format ?? null,
      state: parsed.error ? 'error' : 'ok',
      error: parsed.error
    }
  }

  private async readAndApply(): Promise<void> {
    for (const layer of this.layers) await this.readLayer(layer)
    const winners = new Map<string, { entry: ParsedEntry; origin: Origin }>()
    for (const layer of this.layers) {
      for (const entry of layer.parsed?.entries ?? []) {
        const below = winners.get(entry.name)
        const shadows = below
          ? [...below.origin.shadows, { source: below.origin.source, path: below.origin.sourcePath }]
          : []
        winners.set(entry.name, {
          entry,
          origin: { source: layer.kind, sourcePath: layer.path, shadows, raw: entry.raw }
        })
      }
    }
    const servers: McpServerConfig[] = []
    const invalid: InvalidEntry[] = []
    const origins = new Map<string, Origin>()
    for (const [name, { entry, origin }] of winners) {
      origins.set(name, origin)
      if (entry.ok) servers.push(await this.withPersistence(entry.config))
      else invalid.push({ name, error: entry.error, origin })
    }
    await this.registry.applyConfig({ servers, invalid, origins, clientMetadataUrl: this.clientMetadata().url })
  }

  /** The app's client ID metadata document URL in force: the host's option (the CLI flag), else settings.json's. */
  clientMetadata(): ClientMetadataSetting {
    if (this.options.clientMetadataUrl) return { url: this.options.clientMetadataUrl, source: 'flag' }
    const url = this.layers.find((layer) => layer.kind === 'settings')?.parsed?.clientMetadataUrl ?? null
    return { url, source: url ? 'settings' : null }
  }

  /** Writes `mcp.clientMetadataUrl` into settings.json (null removes it); authorization-code servers reconnect with it. */
  async setClientMetadataUrl(url: string | null): Promise<ClientMetadataSetting> {
    const layer = this.layers.find((candidate) => candidate.kind === 'settings')
    if (!layer)
      throw new McpFailure('invalid_config', 'there is no settings file to write to (--config reads one file only)')
    await updateJsonFile(layer.path, (root) => {
      const mcp = objectAt(root, ['mcp'])
      if (url === null) delete mcp.clientMetadataUrl
      else mcp.clientMetadataUrl = url
    })
    await this.reload()
    return this.clientMetadata()
  }

  /** authorizationCode servers get their stored tokens and client, and save new ones as they come. */
  private async withPersistence(config: McpServerConfig): Promise<McpServerConfig> {
    if (config.transport !== 'http' || config.auth.mode !== 'authorizationCode' || config.auth.oauthProviderRef)
      return config
    try {
      const persisted = await storePersistence(this.options.secretStore, config.name)
      const { auth } = config
      return {
        ...config,
        auth: {
          ...auth,
          ...((persisted.tokens ?? auth.tokens) ? { tokens: persisted.tokens ?? auth.tokens } : {}),
          ...((auth.client ?? persisted.client) ? { client: auth.client ?? persisted.client } : {}),
          onTokensChanged: async (tokens) => {
            await persisted
              .onTokensChanged(tokens)
              .catch((error: unknown) =>
                this.warn(`could not store the tokens of ${config.name}: ${(error as Error).message}`)
              )
            await auth.onTokensChanged?.(tokens)
          },
          onClientRegistered: async (client) => {
            await persisted
              .onClientRegistered(client)
              .catch((error: unknown) =>
                this.warn(`could not store the client of ${config.name}: ${(error as Error).message}`)
              )
            await auth.onClientRegistered?.(client)
          }
        }
      }
    } catch (error) {
      this.warn(
        `${this.options.secretStore.description}: ${(error as Error).message}; ${config.name} keeps its tokens in memory only`
      )
      return config
    }
  }

  private warn(line: string): void {
    this.options.log?.(`[mcp] ${line}`)
  }

  private layerFor(target: SaveTarget): Layer {
    const kind: SourceKind = this.options.configFile ? 'file' : target
    const layer = this.layers.find((candidate) => candidate.kind === kind)
    if (!layer) throw new McpFailure('invalid_config', `there is no ${target} file to write to`)
    if (layer.kind !== 'settings' && layer.parsed && layer.parsed.format !== 'servers') {
      throw new McpFailure(
        'invalid_config',
        `${layer.path} uses the ${layer.parsed.format} format; save the server to settings instead`
      )
    }
    return layer
  }

  private mapKeys(layer: Layer): string[] {
    return layer.kind === 'settings' ? ['mcp', 'servers'] : ['servers']
  }

  /**
   * Saves one server from the UI: masked secrets keep their stored values, secrets typed in go to the secret store
   * (the file gets `${keychain:<field>}`), and an entry that does not validate is refused with the path at fault.
   */
  async save(name: string, entry: unknown, target: SaveTarget = 'settings', previousName?: string): Promise<McpEntry> {
    const layer = this.layerFor(target)
    if (!entry || typeof entry !== 'object' || Array.isArray(entry))
      throw new McpFailure('invalid_config', 'the server entry must be a JSON object', { path: [name] })
    const existing = layer.parsed?.entries.find((candidate) => candidate.name === (previousName ?? name))?.raw ?? null
    const restored = restoreMasked(entry as Record<string, unknown>, existing, [])
    if (previousName && previousName !== name) await this.copySecrets(restored, previousName, name)
    const context = this.expandContext()
    const checked = await parseEntry(name, restored, this.mapKeys(layer), layer.path, 'servers', context)
    if (!checked.ok)
      throw new McpFailure('invalid_config', checked.error.message, {
        ...(checked.error.path ? { path: checked.error.path } : {})
      })
    const stored = await this.storeSecrets(name, restored, [])
    await updateJsonFile(layer.path, (root) => {
      const map = objectAt(root, this.mapKeys(layer))
      putEntry(map, name, stored, previousName)
    })
    await this.reload()
    return this.registry.describe(name)
  }

  /**
   * Copies the servers of another client's file (Claude, Cursor, VS Code, Inspector) into settings.json as our records,
   * placeholders kept and literal secrets moved to the secret store; names settings.json already has are skipped.
   * Entries that need a value first (`${VAR}`, `${input:id}`) are listed in error state until they get it.
   */
  async importFrom(path: string): Promise<{ imported: string[]; skipped: Array<{ name: string; reason: string }> }> {
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch (error) {
      throw new McpFailure(
        'invalid_config',
        `cannot import ${path}: it cannot be read (${(error as NodeJS.ErrnoException).code ?? 'read error'})`
      )
    }
    let root: unknown
    try {
      root = JSON.parse(text)
    } catch (error) {
      throw new McpFailure(
        'invalid_config',
        `cannot import ${path}: it ${jsonSyntaxProblem(error)}; import a Claude, Cursor, VS Code or Inspector config file`
      )
    }
    const record = (root && typeof root === 'object' ? root : {}) as Record<string, unknown>
    const map = (record.mcpServers ?? record.servers) as Record<string, unknown> | undefined
    if (!map || typeof map !== 'object')
      throw new McpFailure('invalid_config', `${path} has no "mcpServers" or "servers" map`)
    const layer = this.layerFor('settings')
    const existing = new Set(layer.parsed?.entries.map((entry) => entry.name) ?? [])
    const imported: string[] = []
    const skipped: Array<{ name: string; reason: string }> = []
    const entries: Array<[string, Record<string, unknown>]> = []
    for (const [name, raw] of Object.entries(map)) {
      if (existing.has(name)) skipped.push({ name, reason: 'settings.json already has a server of this name' })
      else if (!raw || typeof raw !== 'object' || Array.isArray(raw)) skipped.push({ name, reason: 'not an object' })
      else entries.push([name, await this.storeSecrets(name, importForeignEntry(raw as Record<string, unknown>), [])])
    }
    await updateJsonFile(layer.path, (rootObject) => {
      const servers = objectAt(rootObject, this.mapKeys(layer))
      for (const [name, entry] of entries) {
        servers[name] = entry
        imported.push(name)
      }
    })
    await this.reload()
    return { imported, skipped }
  }

  /** The value of a VS Code `${input:id}` (a password prompt there), kept in the secret store. */
  async setInput(id: string, value: string): Promise<void> {
    await this.options.secretStore.set(`input:${id}`, value)
    await this.reload()
  }

  /** Removes a server from a file and deletes its tokens, client and stored secrets. */
  async remove(name: string, target: SaveTarget = 'settings'): Promise<boolean> {
    const layer = this.layerFor(target)
    const raw = layer.parsed?.entries.find((candidate) => candidate.name === name)?.raw
    if (!raw) return false
    await updateJsonFile(layer.path, (root) => {
      delete objectAt(root, this.mapKeys(layer))[name]
    })
    const store = this.options.secretStore
    await forgetPersisted(store, name, { client: true }).catch(() => {})
    for (const field of keychainFields(raw)) await store.delete(secretAccount(name, field)).catch(() => {})
    await this.reload()
    return true
  }

  private async storeSecrets(
    name: string,
    value: Record<string, unknown>,
    path: string[]
  ): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(value)) {
      const at = [...path, key]
      if (isLiteralSecret(key, child) && at[0] !== 'transport') {
        await this.options.secretStore.set(secretAccount(name, at.join('.')), child)
        out[key] = `\${keychain:${at.join('.')}}`
      } else if (child && typeof child === 'object' && !Array.isArray(child)) {
        out[key] = await this.storeSecrets(name, child as Record<string, unknown>, at)
      } else {
        out[key] = child
      }
    }
    return out
  }

  private async copySecrets(entry: Record<string, unknown>, from: string, to: string): Promise<void> {
    const store = this.options.secretStore
    for (const field of keychainFields(entry)) {
      const value = await store.get(secretAccount(from, field))
      if (value !== undefined) await store.set(secretAccount(to, field), value)
    }
  }

  private watchLayer(layer: Layer): void {
    const file = basename(layer.path)
    try {
      const watcher = watch(dirname(layer.path), (_event, changed) => {
        if (changed === null || changed === file) this.scheduleReload()
      })
      watcher.on('error', (error) => this.warn(`watching ${layer.path}: ${error.message}`))
      this.watchers.push(watcher)
    } catch (error) {
      this.warn(`cannot watch ${layer.path}: ${(error as Error).message}`)
    }
  }

  private scheduleReload(): void {
    if (this.debounce) clearTimeout(this.debounce)
    this.debounce = setTimeout(() => {
      this.debounce = null
      this.reload().catch((error: unknown) => this.warn(`reload failed: ${(error as Error).message}`))
    }, 150)
  }

  async close(): Promise<void> {
    if (this.debounce) clearTimeout(this.debounce)
    for (const watcher of this.watchers) watcher.close()
    await this.reloading
    await this.registry.close()
  }
}

/** The UI shows MASK for secrets; saving MASK back means "keep what is stored". */
function restoreMasked(
  value: Record<string, unknown>,
  existing: Record<string, unknown> | null,
  path: string[]
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) {
    const before = existing?.[key]
    if (child === MASK) {
      if (before === undefined)
        throw new McpFailure(
          'invalid_config',
          `${[...path, key].join('.')}: enter the secret (nothing is stored for it yet)`,
          { path: [...path, key] }
        )
      out[key] = before
    } else if (child && typeof child === 'object' && !Array.isArray(child)) {
      out[key] = restoreMasked(
        child as Record<string, unknown>,
        before && typeof before === 'object' ? (before as Record<string, unknown>) : null,
        [...path, key]
      )
    } else {
      out[key] = child
    }
  }
  return out
}

function keychainFields(entry: unknown): string[] {
  return [...JSON.stringify(entry).matchAll(KEYCHAIN_PLACEHOLDER)].map((match) => match[1] ?? '')
}
