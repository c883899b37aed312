import { createHash } from 'node:crypto'
import { z } from 'zod'
import type { WorkspaceReview } from '../../../shared/contract/mcp'
import { readPrivateJson, writePrivateJson } from '../persistence/file-store'
import { withLockFile } from '../persistence/lock-file'

/** The approvals, in the data folder (0600): which workspace mcp.json files, with which content, the person approved. */
export const TRUST_FILE = 'mcp-trust.json'

const ApprovalSchema = z.object({ sha256: z.string(), approvedAt: z.string() })
const TrustFileSchema = z.object({
  version: z.literal(1),
  workspaces: z.record(z.string(), ApprovalSchema)
})
type TrustFile = z.infer<typeof TrustFileSchema>

export type TrustState = WorkspaceReview['state']
export interface TrustVerdict {
  state: TrustState
  approvedAt: string | null
  /** Why no approval could be read (the file unreadable): every workspace is then untrusted. */
  error: string | null
}

export const contentDigest = (text: string): string => createHash('sha256').update(text).digest('hex')

/**
 * Workspace trust, as VS Code and Claude Code have it for project MCP servers: a workspace mcp.json runs nothing until
 * the person approves it, and the approval holds for the content approved (its SHA-256) only.
 */
export class TrustStore {
  constructor(readonly file: string) {}

  private async read(): Promise<TrustFile> {
    const root = await readPrivateJson(this.file)
    if (Object.keys(root).length === 0) return { version: 1, workspaces: {} }
    const parsed = TrustFileSchema.safeParse(root)
    if (!parsed.success) throw new Error(`${this.file} is not a file of approvals: delete it and approve again`)
    return parsed.data
  }

  async verdict(path: string, sha256: string): Promise<TrustVerdict> {
    let approval: z.infer<typeof ApprovalSchema> | undefined
    try {
      approval = (await this.read()).workspaces[path]
    } catch (error) {
      return { state: 'untrusted', approvedAt: null, error: (error as Error).message }
    }
    if (!approval) return { state: 'untrusted', approvedAt: null, error: null }
    return { state: approval.sha256 === sha256 ? 'trusted' : 'changed', approvedAt: approval.approvedAt, error: null }
  }

  approve(path: string, sha256: string): Promise<void> {
    return this.update((workspaces) => {
      workspaces[path] = { sha256, approvedAt: new Date().toISOString() }
    })
  }

  revoke(path: string): Promise<void> {
    return this.update((workspaces) => {
      delete workspaces[path]
    })
  }

  /** Read-modify-write under a lock file shared with every Syncscope process (the app, `syncscope mcp trust`). */
  private update(change: (workspaces: TrustFile['workspaces']) => void): Promise<void> {
    return withLockFile(`${this.file}.lock`, async () => {
      const current = await this.read()
      const workspaces = { ...current.workspaces }
      change(workspaces)
      await writePrivateJson(this.file, { version: 1, workspaces })
    })
  }
}
