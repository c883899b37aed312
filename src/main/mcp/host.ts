import { watch, type FSWatcher } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type {
  ClientMetadataSetting,
  McpEntry,
  McpServerConfig,
  McpSource,
  OAuthExchange,
  WorkspaceReview
} from '../../shared/contract/mcp'
import { clientMetadataDocument } from './auth/client-metadata'
import { extractSecrets, keychainFields, restoreMasked } from './config/entry-secrets'
import { jsonSyntaxProblem, objectAt, putEntry, updateJsonFile } from './config/json-file'
import { ConfigLayers, type Layer } from './config/layers'
import { importForeignEntry, parseEntry, type FileContext, type SourceKind } from './config/parse'
import { TRUST_FILE, TrustStore } from './config/trust'
import type { TokenRecord } from './auth/refresh-coordinator'
import type { RestartPolicy } from './connection'
import { McpFailure } from './errors'
import { bindingTarget, boundName, describeBinding, entryBinding, type SecretOwner } from './persistence/binding'
import { BoundSecrets } from './persistence/bound-secrets'
import { withLockFile } from './persistence/lock-file'
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
  /** The approvals of workspace files (default: `mcp-trust.json` beside settings.json; none: never approved). */
  trustFile?: string | null
  log?: (line: string) => void
}

export type SaveTarget = 'settings' | 'workspace'

/**
 * The MCP room: config files layered (settings.json below the workspace mcp.json), watched, and applied to one
 * Registry; OAuth tokens and typed-in secrets kept in the secret store.
 */
export class McpHost {
  readonly registry: Registry
  private readonly files: ConfigLayers
  private readonly watchers: FSWatcher[] = []
  private reloading: Promise<void> | null = null
  private reloadAgain = false
  private debounce: NodeJS.Timeout | null = null
  private readonly trustFile: string | null
  private readonly secrets: BoundSecrets
  /** The entries in service by name, as their stored secrets and tokens know them. */
  private owners = new Map<string, SecretOwner>()

  constructor(private readonly options: McpHostOptions) {
    this.trustFile =
      options.trustFile !== undefined
        ? options.trustFile
        : options.settingsFile
          ? join(dirname(options.settingsFile), TRUST_FILE)
          : null
    this.files = new ConfigLayers(this.layerFiles(), this.trustFile ? new TrustStore(this.trustFile) : null)
    // what an earlier version stored by name alone belongs to the person's own entry of that name
    this.secrets = new BoundSecrets(
      options.secretStore,
      (owner) => owner.source !== 'workspace' || !this.files.own(owner.name)
    )
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
      onLogout: async (server) => {
        const owner = this.owners.get(server)
        if (!owner) return
        await this.secrets
          .logout(owner)
          .catch((error: unknown) => this.warn(`could not delete the tokens of ${server}: ${(error as Error).message}`))
      }
    })
  }

  /** The persisted tokens of a server and the lock file every Syncscope process takes before refreshing them. */
  private tokenRecord(server: string): TokenRecord | null {
    const lockDir = this.options.lockDir ?? (this.options.settingsFile ? dirname(this.options.settingsFile) : null)
    const owner = this.owners.get(server)
    if (!lockDir || !owner) return null
    return {
      read: () => this.secrets.tokens(owner),
      locked: (work) => withLockFile(join(lockDir, `mcp-tokens-${boundName(owner)}.lock`), work)
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
    const settings = this.files.find('settings')
    if (settings) await mkdir(dirname(settings.path), { recursive: true })
    for (const layer of this.files.layers) this.watchFile(layer.path)
    // an approval given elsewhere (`syncscope mcp trust`) applies here too
    if (this.trustFile && this.files.find('workspace')) {
      await mkdir(dirname(this.trustFile), { recursive: true, mode: 0o700 })
      this.watchFile(this.trustFile)
    }
  }

  /** The one file read instead of the layers (`--config`), if any. */
  get configFile(): string | undefined {
    return this.options.configFile
  }

  sources(): McpSource[] {
    return this.files.sources()
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

  private fileContext(): FileContext {
    return {
      env: this.options.env ?? process.env,
      secret: (kind, id, owner) =>
        kind === 'input' ? this.options.secretStore.get(`input:${id}`) : this.secrets.secret(owner, id),
      missingSecret: async (field, owner) => {
        const own = owner.source === 'workspace' ? this.files.own(owner.name) : undefined
        const elsewhere =
          own?.binding && own.binding !== owner.binding
            ? ` (secrets stay with the URL or command line they were entered for: the one stored for ${owner.name} is for ${bindingTarget(own.binding)})`
            : ''
        return `the secret ${field} is not stored for ${describeBinding(owner)}: enter it again${elsewhere}`
      }
    }
  }

  private async readAndApply(): Promise<void> {
    await this.files.read(this.fileContext())
    const servers: McpServerConfig[] = []
    const invalid: InvalidEntry[] = []
    const origins = new Map<string, Origin>()
    const owners = new Map<string, SecretOwner>()
    for (const [name, { entry, origin }] of this.files.winners()) {
      origins.set(name, origin)
      if (!entry.ok) {
        invalid.push({ name, error: entry.error, origin })
        continue
      }
      const owner = { name, binding: entry.binding, source: origin.source }
      owners.set(name, owner)
      servers.push(await this.withPersistence(entry.config, owner))
    }
    this.owners = owners
    await this.registry.applyConfig({ servers, invalid, origins, clientMetadataUrl: this.clientMetadata().url })
  }

  /**
   * The app's client ID metadata document URL in force (the host's option, the CLI flag, wins over settings.json's),
   * and the document to publish there: one loopback callback per server that logs in with the grant.
   */
  clientMetadata(): ClientMetadataSetting {
    const flag = this.options.clientMetadataUrl
    const url = flag ?? this.files.find('settings')?.parsed?.clientMetadataUrl ?? null
    if (!url) return { url: null, source: null, document: null }
    const servers = this.registry
      .list()
      .filter((entry) => entry.authMode === 'authorizationCode')
      .map((entry) => entry.name)
    return { url, source: flag ? 'flag' : 'settings', document: clientMetadataDocument(url, servers) }
  }

  /** Writes `mcp.clientMetadataUrl` into settings.json (null removes it); authorization-code servers reconnect with it. */
  async setClientMetadataUrl(url: string | null): Promise<ClientMetadataSetting> {
    const layer = this.files.find('settings')
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

  /** authorizationCode servers get their stored tokens and client (of their name and URL), and save new ones. */
  private async withPersistence(config: McpServerConfig, owner: SecretOwner): Promise<McpServerConfig> {
    if (config.transport !== 'http' || config.auth.mode !== 'authorizationCode' || config.auth.oauthProviderRef)
      return config
    try {
      const persisted = await this.secrets.persistence(owner)
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
    const layer = this.files.find(this.options.configFile ? 'file' : target)
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
   * (the file gets `${keychain:<field>}`), and an entry that does not validate is refused with the path at fault. The
   * person's own edit: a renamed entry, or one given another URL or command, keeps the secrets typed in for it.
   */
  async save(name: string, entry: unknown, target: SaveTarget = 'settings', previousName?: string): Promise<McpEntry> {
    const layer = this.layerFor(target)
    if (!entry || typeof entry !== 'object' || Array.isArray(entry))
      throw new McpFailure('invalid_config', 'the server entry must be a JSON object', { path: [name] })
    const before = layer.parsed?.entries.find((candidate) => candidate.name === (previousName ?? name))
    const { entry: written, secrets: typed } = extractSecrets(
      restoreMasked(entry as Record<string, unknown>, before?.raw ?? null)
    )
    const owner: SecretOwner = { name, binding: entryBinding(written), source: layer.kind }
    const previous = before?.binding ? { name: before.name, binding: before.binding, source: layer.kind } : null
    const moved = previous && (previous.name !== name || previous.binding !== owner.binding) ? previous : null
    // checked as it will be read: the secrets typed in now, the ones kept from where they are stored so far
    const context = this.fileContext()
    const place = { kind: layer.kind, source: layer.path, format: 'servers' as const, basePath: this.mapKeys(layer) }
    const checked = await parseEntry(name, written, place, {
      ...context,
      secret: async (kind, id, reader) =>
        kind === 'keychain' && typed.has(id)
          ? typed.get(id)
          : ((await context.secret(kind, id, reader)) ??
            (kind === 'keychain' && moved ? this.secrets.secret(moved, id) : undefined))
    })
    if (!checked.ok)
      throw new McpFailure('invalid_config', checked.error.message, {
        ...(checked.error.path ? { path: checked.error.path } : {})
      })
    if (moved) await this.secrets.copySecrets(moved, owner, keychainFields(written))
    for (const [field, value] of typed) await this.secrets.setSecret(owner, field, value)
    await this.write(layer, (map) => putEntry(map, name, written, previousName))
    await this.reload()
    return this.registry.describe(name)
  }

  /**
   * A change the person made in the app to one of the files's servers map. An approved workspace file stays approved
   * for what the app wrote into it (its other entries are as approved); an unapproved one stays unapproved.
   */
  private async write(layer: Layer, change: (map: Record<string, unknown>) => void): Promise<void> {
    const approved = layer.verdict?.state === 'trusted'
    const text = await updateJsonFile(layer.path, (root) => change(objectAt(root, this.mapKeys(layer))))
    await this.files.wrote(layer, text, approved)
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
      else {
        const { entry, secrets } = extractSecrets(importForeignEntry(raw as Record<string, unknown>))
        const owner = { name, binding: entryBinding(entry), source: layer.kind }
        for (const [field, value] of secrets) await this.secrets.setSecret(owner, field, value)
        entries.push([name, entry])
      }
    }
    await this.write(layer, (servers) => {
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
    const entry = layer.parsed?.entries.find((candidate) => candidate.name === name)
    if (!entry?.raw) return false
    await this.write(layer, (map) => {
      delete map[name]
    })
    if (entry.binding)
      await this.secrets.forget({ name, binding: entry.binding, source: layer.kind }, keychainFields(entry.raw))
    await this.reload()
    return true
  }

  /** The workspace mcp.json as read now, for the person to review (null: there is none). */
  workspaceReview(): WorkspaceReview | null {
    return this.files.review()
  }

  /** Approves the workspace mcp.json with the content reviewed (`sha256`); refused when the file changed since. */
  async approveWorkspace(sha256: string): Promise<WorkspaceReview> {
    await this.files.approve(sha256)
    await this.reload()
    return this.files.review()!
  }

  /** Takes the approval of the workspace mcp.json away: its servers stop. */
  async revokeWorkspace(): Promise<WorkspaceReview | null> {
    await this.files.revoke()
    await this.reload()
    return this.files.review()
  }

  /** Reloads when `path` changes: its folder is watched (the file may not exist yet, and editors replace files). */
  private watchFile(path: string): void {
    const file = basename(path)
    try {
      const watcher = watch(dirname(path), (_event, changed) => {
        if (changed === null || changed === file) this.scheduleReload()
      })
      watcher.on('error', (error) => this.warn(`watching ${path}: ${error.message}`))
      this.watchers.push(watcher)
    } catch (error) {
      this.warn(`cannot watch ${path}: ${(error as Error).message}`)
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
