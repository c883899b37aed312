import { watch, type FSWatcher } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { McpServerConfig, SourceKind } from '../../shared/contract/mcp-config'
import type { ClientMetadataSetting, WorkspaceReview } from '../../shared/contract/mcp-files'
import type { McpEntry, McpSource, OAuthExchange } from '../../shared/contract/mcp'
import { clientMetadataDocument } from './auth/client-metadata'
import { ConfigEditor, type SaveTarget } from './config/editor'
import { ConfigLayers } from './config/layers'
import { TRUST_FILE, TrustStore } from './config/trust'
import type { RestartPolicy } from './connection/machine'
import type { InvalidEntry, Origin, RegistryOptions } from './entry'
import type { SecretOwner } from './persistence/binding'
import type { SecretStore } from './persistence/store'
import { SecretWiring } from './persistence/wiring'
import { Registry } from './registry'

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

/**
 * The MCP room: config files layered (settings.json below the workspace mcp.json), watched, and applied to one
 * Registry. Its parts: the layers (config/layers.ts), the person's edits (config/editor.ts), the secret store's
 * wiring into the entries (persistence/wiring.ts).
 */
export class McpHost {
  readonly registry: Registry
  private readonly files: ConfigLayers
  private readonly editor: ConfigEditor
  private readonly wiring: SecretWiring
  private readonly watchers: FSWatcher[] = []
  private reloading: Promise<void> | null = null
  private reloadAgain = false
  private debounce: NodeJS.Timeout | null = null
  private readonly trustFile: string | null

  constructor(private readonly options: McpHostOptions) {
    const settingsDir = options.settingsFile ? dirname(options.settingsFile) : null
    this.trustFile =
      options.trustFile !== undefined ? options.trustFile : settingsDir ? join(settingsDir, TRUST_FILE) : null
    this.files = new ConfigLayers(this.layerFiles(), this.trustFile ? new TrustStore(this.trustFile) : null)
    this.wiring = new SecretWiring({
      store: options.secretStore,
      env: options.env ?? process.env,
      lockDir: options.lockDir ?? settingsDir,
      own: (name) => this.files.own(name),
      warn: (line) => this.warn(line)
    })
    this.editor = new ConfigEditor(this.files, this.wiring, options.configFile)
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
      tokenRecord: (server) => this.wiring.tokenRecord(server),
      onLogout: (server) => this.wiring.logout(server)
    })
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

  private async readAndApply(): Promise<void> {
    await this.files.read(this.wiring.fileContext())
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
      servers.push(await this.wiring.withPersistence(entry.config, owner))
    }
    this.wiring.owners = owners
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
    await this.editor.setClientMetadataUrl(url)
    await this.reload()
    return this.clientMetadata()
  }

  /** Saves one server from the UI into a file (see ConfigEditor.save), and applies it. */
  async save(name: string, entry: unknown, target: SaveTarget = 'settings', previousName?: string): Promise<McpEntry> {
    await this.editor.save(name, entry, target, previousName)
    await this.reload()
    return this.registry.describe(name)
  }

  /** Copies another client's servers into settings.json (see ConfigEditor.importFrom), and applies them. */
  async importFrom(path: string): Promise<{ imported: string[]; skipped: Array<{ name: string; reason: string }> }> {
    const result = await this.editor.importFrom(path)
    await this.reload()
    return result
  }

  /** The value of a VS Code `${input:id}` (a password prompt there), kept in the secret store. */
  async setInput(id: string, value: string): Promise<void> {
    await this.options.secretStore.set(`input:${id}`, value)
    await this.reload()
  }

  /** Removes a server from a file and deletes its tokens, client and stored secrets. */
  async remove(name: string, target: SaveTarget = 'settings'): Promise<boolean> {
    if (!(await this.editor.remove(name, target))) return false
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

  private warn(line: string): void {
    this.options.log?.(`[mcp] ${line}`)
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
