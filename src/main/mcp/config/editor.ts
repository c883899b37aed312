import { readFile } from 'node:fs/promises'
import { McpFailure } from '../errors'
import { entryBinding, type SecretOwner } from '../persistence/binding'
import type { SecretWiring } from '../persistence/wiring'
import { extractSecrets, keychainFields, restoreMasked } from './entry-secrets'
import { jsonSyntaxProblem, objectAt, putEntry, updateJsonFile } from './json-file'
import type { ConfigLayers, Layer } from './layers'
import { importForeignEntry, parseEntry } from './parse'

export type SaveTarget = 'settings' | 'workspace'

/**
 * The person's edits of the config files from the app: an entry saved, imported or removed, the client ID metadata
 * URL set. Each writes one file (secrets typed in go to the secret store); the host then reads the files again.
 */
export class ConfigEditor {
  constructor(
    private readonly files: ConfigLayers,
    private readonly wiring: SecretWiring,
    /** The one file read instead of the layers (`--config`), if any. */
    private readonly configFile: string | undefined
  ) {}

  /**
   * Saves one server: masked secrets keep their stored values, secrets typed in go to the secret store (the file gets
   * `${keychain:<field>}`), and an entry that does not validate is refused with the path at fault. The person's own
   * edit: a renamed entry, or one given another URL or command, keeps the secrets typed in for it.
   */
  async save(name: string, entry: unknown, target: SaveTarget, previousName?: string): Promise<void> {
    const layer = this.layerFor(target)
    const { secrets } = this.wiring
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
    const context = this.wiring.fileContext()
    const place = { kind: layer.kind, source: layer.path, format: 'servers' as const, basePath: mapKeys(layer) }
    const checked = await parseEntry(name, written, place, {
      ...context,
      secret: async (kind, id, reader) =>
        kind === 'keychain' && typed.has(id)
          ? typed.get(id)
          : ((await context.secret(kind, id, reader)) ??
            (kind === 'keychain' && moved ? secrets.secret(moved, id) : undefined))
    })
    if (!checked.ok)
      throw new McpFailure('invalid_config', checked.error.message, {
        ...(checked.error.path ? { path: checked.error.path } : {})
      })
    if (moved) await secrets.copySecrets(moved, owner, keychainFields(written))
    for (const [field, value] of typed) await secrets.setSecret(owner, field, value)
    await this.write(layer, (map) => putEntry(map, name, written, previousName))
  }

  /**
   * Copies the servers of another client's file (Claude, Cursor, VS Code, Inspector) into settings.json as our records,
   * placeholders kept and literal secrets moved to the secret store; names settings.json already has are skipped.
   * Entries that need a value first (`${VAR}`, `${input:id}`) are listed in error state until they get it.
   */
  async importFrom(path: string): Promise<{ imported: string[]; skipped: Array<{ name: string; reason: string }> }> {
    const map = await foreignServers(path)
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
        for (const [field, value] of secrets) await this.wiring.secrets.setSecret(owner, field, value)
        entries.push([name, entry])
      }
    }
    await this.write(layer, (servers) => {
      for (const [name, entry] of entries) {
        servers[name] = entry
        imported.push(name)
      }
    })
    return { imported, skipped }
  }

  /** Removes a server from a file and deletes its tokens, client and stored secrets; false when it has none. */
  async remove(name: string, target: SaveTarget): Promise<boolean> {
    const layer = this.layerFor(target)
    const entry = layer.parsed?.entries.find((candidate) => candidate.name === name)
    if (!entry?.raw) return false
    await this.write(layer, (map) => {
      delete map[name]
    })
    if (entry.binding)
      await this.wiring.secrets.forget({ name, binding: entry.binding, source: layer.kind }, keychainFields(entry.raw))
    return true
  }

  /** Writes `mcp.clientMetadataUrl` into settings.json (null removes it). */
  async setClientMetadataUrl(url: string | null): Promise<void> {
    const layer = this.files.find('settings')
    if (!layer)
      throw new McpFailure('invalid_config', 'there is no settings file to write to (--config reads one file only)')
    await updateJsonFile(layer.path, (root) => {
      const mcp = objectAt(root, ['mcp'])
      if (url === null) delete mcp.clientMetadataUrl
      else mcp.clientMetadataUrl = url
    })
  }

  private layerFor(target: SaveTarget): Layer {
    const layer = this.files.find(this.configFile ? 'file' : target)
    if (!layer) throw new McpFailure('invalid_config', `there is no ${target} file to write to`)
    if (layer.kind !== 'settings' && layer.parsed && layer.parsed.format !== 'servers') {
      throw new McpFailure(
        'invalid_config',
        `${layer.path} uses the ${layer.parsed.format} format; save the server to settings instead`
      )
    }
    return layer
  }

  /**
   * A change the person made in the app to one of the files's servers map. An approved workspace file stays approved
   * for what the app wrote into it (its other entries are as approved); an unapproved one stays unapproved.
   */
  private async write(layer: Layer, change: (map: Record<string, unknown>) => void): Promise<void> {
    const approved = layer.verdict?.state === 'trusted'
    const text = await updateJsonFile(layer.path, (root) => change(objectAt(root, mapKeys(layer))))
    await this.files.wrote(layer, text, approved)
  }
}

function mapKeys(layer: Layer): string[] {
  return layer.kind === 'settings' ? ['mcp', 'servers'] : ['servers']
}

/** The servers map of another client's config file, or a failure naming why it cannot be imported. */
async function foreignServers(path: string): Promise<Record<string, unknown>> {
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
  return map
}
