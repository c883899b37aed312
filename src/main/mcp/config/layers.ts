import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { McpSource, McpToolError, WorkspaceReview } from '../../../shared/contract/mcp'
import { McpFailure } from '../errors'
import { parseConfigText, type FileContext, type ParsedEntry, type ParsedFile, type SourceKind } from './parse'
import { reviewWorkspace } from './review'
import { contentDigest, type TrustStore, type TrustVerdict } from './trust'

export interface Layer {
  kind: SourceKind
  path: string
  /** The last readable contents: a broken file keeps serving these. */
  parsed: ParsedFile | null
  /** The contents as they are now (a broken file: its error, no entries), for the review. */
  current: ParsedFile | null
  /** Workspace files: the digest of the contents read, and whether the person approved them. */
  sha256: string | null
  verdict: TrustVerdict | null
  source: McpSource
}

/** Where an entry in service comes from: the layer's kind and path, the entries it hides, the entry as written. */
export interface Winner {
  entry: ParsedEntry
  origin: {
    source: SourceKind
    sourcePath: string | null
    shadows: Array<{ source: SourceKind; path: string | null }>
    raw: Record<string, unknown> | null
  }
}

const NO_TRUST_STORE: TrustVerdict = {
  state: 'untrusted',
  approvedAt: null,
  error: 'there is no data folder to keep approvals in'
}

/** Why an entry of a workspace file the person has not approved (or that changed since) does not run. */
function untrusted(path: string, verdict: TrustVerdict): (name: string) => McpToolError {
  const how = `on the MCP page or with \`syncscope mcp trust --workspace ${dirname(path)}\``
  const why =
    verdict.state === 'changed'
      ? `which changed since you approved it (${verdict.approvedAt}): review it and approve it again ${how}`
      : `which you have not approved: review it and approve it ${how}`
  return (name) => ({ code: 'untrusted', message: `${name} comes from ${path}, ${why}`, source: path })
}

/**
 * The config files, lowest first (settings.json, then the workspace mcp.json, which wins for a name both have), as
 * last read. A workspace file's entries are read only once the person approved its content (see trust.ts); until
 * then they are listed as written, with nothing in them expanded.
 */
export class ConfigLayers {
  readonly layers: Layer[]

  constructor(
    files: Array<{ kind: SourceKind; path: string }>,
    private readonly trust: TrustStore | null
  ) {
    this.layers = files.map(({ kind, path }) => ({
      kind,
      path,
      parsed: null,
      current: null,
      sha256: null,
      verdict: null,
      source: { kind, path, format: null, state: 'missing', error: null }
    }))
  }

  find(kind: SourceKind): Layer | undefined {
    return this.layers.find((layer) => layer.kind === kind)
  }

  sources(): McpSource[] {
    return this.layers.map((layer) => layer.source)
  }

  /** settings.json's (or the one --config file's) entry of this name: the person's own. */
  own(name: string): ParsedEntry | undefined {
    const own = this.layers.find((layer) => layer.kind !== 'workspace')
    return own?.parsed?.entries.find((entry) => entry.name === name)
  }

  /** Reads every layer, lowest first (the person's own entries are known when the workspace's are read). */
  async read(context: FileContext): Promise<void> {
    for (const layer of this.layers) await this.readLayer(layer, context)
  }

  private async readLayer(layer: Layer, context: FileContext): Promise<void> {
    let text: string
    try {
      text = await readFile(layer.path, 'utf8')
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT'
      layer.parsed = missing ? null : layer.parsed
      if (missing) [layer.current, layer.sha256, layer.verdict] = [null, null, null]
      layer.source = {
        ...layer.source,
        format: null,
        state: missing ? 'missing' : 'error',
        error: missing ? null : (error as Error).message
      }
      return
    }
    let withhold: ((name: string) => McpToolError) | undefined
    if (layer.kind === 'workspace') {
      layer.sha256 = contentDigest(text)
      layer.verdict = this.trust ? await this.trust.verdict(layer.path, layer.sha256) : NO_TRUST_STORE
      if (layer.verdict.state !== 'trusted') withhold = untrusted(layer.path, layer.verdict)
    }
    const parsed = await parseConfigText(text, layer.kind, layer.path, context, { withhold })
    layer.current = parsed
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

  /** The entry in service for each name: the highest layer's, with the entries it hides. */
  winners(): Map<string, Winner> {
    const winners = new Map<string, Winner>()
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
    return winners
  }

  /** The workspace mcp.json as read now, for the person to review (null: there is none). */
  review(): WorkspaceReview | null {
    const layer = this.find('workspace')
    if (!layer?.sha256 || !layer.verdict) return null
    const own = this.find('settings')
    return reviewWorkspace(
      {
        path: layer.path,
        sha256: layer.sha256,
        verdict: layer.verdict,
        entries: layer.current?.entries ?? [],
        error: layer.current?.error ?? null
      },
      own ? { source: own.kind, path: own.path, entries: own.parsed?.entries ?? [] } : null
    )
  }

  /** Approves the workspace mcp.json with the content reviewed (`sha256`); refused when the file changed since. */
  async approve(sha256: string): Promise<void> {
    const layer = this.find('workspace')
    if (!layer) throw new McpFailure('invalid_config', 'there is no workspace here: nothing to approve')
    if (!this.trust) throw new McpFailure('invalid_config', `${NO_TRUST_STORE.error}: ${layer.path} cannot be approved`)
    const text = await readFile(layer.path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new McpFailure('invalid_config', `${layer.path} cannot be read (${error.code ?? error.message})`)
    })
    if (contentDigest(text) !== sha256)
      throw new McpFailure('invalid_config', `${layer.path} changed since it was reviewed: review it again`)
    await this.trust.approve(layer.path, sha256)
  }

  /** Takes the approval of the workspace mcp.json away. */
  async revoke(): Promise<void> {
    const layer = this.find('workspace')
    if (layer && this.trust) await this.trust.revoke(layer.path)
  }

  /** After the app wrote `text` into an approved workspace file, the approval follows it (an unapproved one stays so). */
  async wrote(layer: Layer, text: string, wasApproved: boolean): Promise<void> {
    if (layer.kind === 'workspace' && wasApproved) await this.trust?.approve(layer.path, contentDigest(text))
  }
}
