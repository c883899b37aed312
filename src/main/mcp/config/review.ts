import type { WorkspaceReview } from '../../../shared/contract/mcp'
import { bindingTarget } from '../persistence/binding'
import { placeholdersIn } from './expand'
import { importForeignEntry, transportOf, type ParsedEntry, type SourceKind } from './parse'
import type { TrustVerdict } from './trust'

export interface ReviewedFile {
  path: string
  sha256: string
  verdict: TrustVerdict
  entries: ParsedEntry[]
  /** The file's own problem (not JSON), if any. */
  error: string | null
}

/** The person's own entries the workspace's could override: settings.json's. */
export interface OwnEntries {
  source: SourceKind
  path: string
  entries: ParsedEntry[]
}

/** What approving a workspace mcp.json would let run: each server, where it goes, what it reads, whom it overrides. */
export function reviewWorkspace(file: ReviewedFile, own: OwnEntries | null): WorkspaceReview {
  return {
    path: file.path,
    sha256: file.sha256,
    state: file.verdict.state,
    approvedAt: file.verdict.approvedAt,
    error: file.error ?? file.verdict.error,
    servers: file.entries.map((entry) => {
      const below = own?.entries.find((candidate) => candidate.name === entry.name)
      return {
        name: entry.name,
        transport: transportOf(entry.raw),
        target: entry.binding === null ? null : bindingTarget(entry.binding),
        asks: entry.raw ? placeholdersIn(importForeignEntry(entry.raw)) : [],
        overrides:
          below && own
            ? {
                source: own.source,
                path: own.path,
                target: below.binding === null ? null : bindingTarget(below.binding),
                sameTarget: below.binding !== null && below.binding === entry.binding
              }
            : null
      }
    })
  }
}
