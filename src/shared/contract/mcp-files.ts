import { z } from 'zod'
import { SourceKindSchema } from './mcp-config'

// What the MCP page shows of files around the servers: the app's client ID metadata document, a workspace mcp.json
// under review, other hosts' config files and what an export would change in them.

/**
 * The app's client_id as the HTTPS URL of its client ID metadata document, used with authorisation servers that
 * advertise `client_id_metadata_document_supported` (an HTTPS URL with a path, as the draft and the SDK require).
 */
export const ClientMetadataUrlSchema = z.string().refine((value) => {
  if (!URL.canParse(value)) return false
  const url = new URL(value)
  return url.protocol === 'https:' && url.pathname !== '/'
}, "must be an https:// URL with a path: where the app's client ID metadata document is served")

/** The client ID metadata document URL in force, and where it is set (the CLI flag wins over settings.json). */
export const ClientMetadataSettingSchema = z.object({
  url: z.string().nullable(),
  source: z.enum(['settings', 'flag']).nullable(),
  /** The document to publish at `url`: it lists the callback of every server that logs in with the grant. */
  document: z.record(z.string(), z.unknown()).nullable()
})
export type ClientMetadataSetting = z.infer<typeof ClientMetadataSettingSchema>

/** A placeholder a file's entry asks to have filled in: an environment variable, the home folder, a secret, an input. */
export const PlaceholderSchema = z.object({
  kind: z.enum(['env', 'userHome', 'keychain', 'input']),
  /** The variable, the secret's field (`auth.key`) or the input's id; empty for userHome. */
  name: z.string()
})
export type Placeholder = z.infer<typeof PlaceholderSchema>

/** A workspace mcp.json as the person reviews it before approving: each server, where it goes, what it asks for. */
export const WorkspaceReviewSchema = z.object({
  path: z.string(),
  /** Of the content reviewed: the approval is pinned to it. */
  sha256: z.string(),
  state: z.enum(['trusted', 'untrusted', 'changed']),
  approvedAt: z.string().nullable(),
  /** Why the file's servers cannot be read (not JSON); they are then listed as none. */
  error: z.string().nullable(),
  servers: z.array(
    z.object({
      name: z.string(),
      transport: z.enum(['http', 'stdio']).nullable(),
      /** The URL, or the command line. */
      target: z.string().nullable(),
      asks: z.array(PlaceholderSchema),
      /** The person's own entry of the same name this one overrides, and whether it is the same server. */
      overrides: z
        .object({
          source: SourceKindSchema,
          path: z.string().nullable(),
          target: z.string().nullable(),
          /** Same URL (origin + path) or command line: the stored secrets and tokens of that entry go to this one. */
          sameTarget: z.boolean()
        })
        .nullable()
    })
  )
})
export type WorkspaceReview = z.infer<typeof WorkspaceReviewSchema>

/** Another host's MCP config file (Claude Desktop/Code, VS Code, Cursor) and what `mcp export` would change in it. */
export const HostExportSchema = z.object({
  host: z.enum(['claude-desktop', 'claude-code', 'vscode', 'cursor']),
  path: z.string(),
  exists: z.boolean(),
  /** Names of the servers in the file now (ours and the host's own). */
  servers: z.array(z.string()),
  diff: z.array(z.string()),
  added: z.array(z.string()),
  updated: z.array(z.string()),
  removed: z.array(z.string()),
  conflicts: z.array(z.string()),
  beforeDigest: z.string(),
  /** Why the file cannot be exported to (not JSON, not readable). */
  error: z.string().nullable(),
  /**
   * Claude Code only: the servers' tool filters in its own form, deny rules `mcp__<server>__<pattern>` in its settings
   * (`launcherOnly`: what its rules cannot say, which `syncscope mcp run` enforces alone).
   */
  permissions: z
    .object({
      path: z.string(),
      diff: z.array(z.string()),
      added: z.array(z.string()),
      removed: z.array(z.string()),
      launcherOnly: z.array(z.string()),
      beforeDigest: z.string()
    })
    .nullable()
    .optional()
})
export type HostExport = z.infer<typeof HostExportSchema>
