import type { WorkspaceReview } from '../../shared/contract/mcp'
import { describeApproval, describeOverride, describePlaceholder } from '../../shared/mcp-review'
import type { McpHost } from '../mcp/host'
import { UsageError, type Output } from './output'

export interface TrustValues {
  yes?: boolean | undefined
  revoke?: boolean | undefined
  json?: boolean | undefined
  config?: string | undefined
}

/** The review as text: the file and its approval, then each server, where it goes, what it asks for, whom it overrides. */
export function formatReview(review: WorkspaceReview): string {
  const lines = [`${review.path}: ${describeApproval(review)}`, `  sha256 ${review.sha256}`]
  if (review.error) lines.push(`  ${review.error}`)
  const width = Math.max(8, ...review.servers.map((server) => server.name.length))
  for (const server of review.servers) {
    lines.push(`  ${server.name.padEnd(width)}  ${String(server.transport ?? '?').padEnd(5)}  ${server.target ?? '?'}`)
    const indent = ' '.repeat(width + 4)
    if (server.asks.length > 0) lines.push(`${indent}asks for: ${server.asks.map(describePlaceholder).join(', ')}`)
    if (server.overrides) lines.push(`${indent}${describeOverride(server.name, server.overrides)}`)
  }
  if (review.servers.length === 0) lines.push('  no servers')
  return `${lines.join('\n')}\n`
}

/** One line for `mcp list` when the workspace file's servers do not run: why, and what to run. */
export function untrustedNote(review: WorkspaceReview | null): string | null {
  if (!review || review.state === 'trusted') return null
  const why = review.state === 'changed' ? `changed since you approved it (${review.approvedAt})` : 'is not approved'
  return `${review.path} ${why}: its servers are listed as untrusted; review it with \`syncscope mcp trust\`\n`
}

/**
 * `syncscope mcp trust`: shows what the workspace mcp.json asks for; `--yes` approves that content (its SHA-256: a
 * later change needs a new approval), `--revoke` takes the approval back.
 */
export async function trustCommand(host: McpHost, values: TrustValues, io: Output): Promise<number> {
  if (values.config) throw new UsageError('trust approves a workspace mcp.json; a --config file is read as given')
  const review = host.workspaceReview()
  if (!review) {
    io.err('syncscope mcp: there is no mcp.json in the workspace: nothing to approve\n')
    return 1
  }
  if (values.revoke) {
    const after = await host.revokeWorkspace()
    io.out(
      values.json
        ? `${JSON.stringify(after, null, 2)}\n`
        : `${review.path}: approval taken back; its servers are listed as untrusted\n`
    )
    return 0
  }
  const shown = values.yes && review.state !== 'trusted' ? await host.approveWorkspace(review.sha256) : review
  io.out(values.json ? `${JSON.stringify(shown, null, 2)}\n` : formatReview(shown))
  if (shown.state !== 'trusted')
    io.err(`nothing approved: run again with --yes to approve this content (sha256 ${review.sha256})\n`)
  return 0
}
