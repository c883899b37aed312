import type { ToolFilter } from '../../../shared/contract/mcp-tool-filter'

/**
 * Whether `name` matches a glob of `*` (any run) and `?` (one character): the pattern's literal pieces are found left
 * to right, each at its first place, which is exact for these two wildcards. At most pattern × name steps, and patterns
 * are at most 200 characters, so a long name from a hostile server costs time linear in its length.
 */
export function globMatches(pattern: string, name: string): boolean {
  const pieces = pattern.split('*')
  if (pieces.length === 1) return pieces[0]!.length === name.length && pieceAt(pieces[0]!, name, 0)
  const first = pieces[0]!
  const last = pieces[pieces.length - 1]!
  if (first.length + last.length > name.length) return false
  if (!pieceAt(first, name, 0) || !pieceAt(last, name, name.length - last.length)) return false
  let from = first.length
  const end = name.length - last.length
  for (const piece of pieces.slice(1, -1)) {
    const found = findPiece(piece, name, from, end)
    if (found < 0) return false
    from = found + piece.length
  }
  return true
}

/** `piece` (with `?` for any one character) at `at` in `name`. */
function pieceAt(piece: string, name: string, at: number): boolean {
  for (let i = 0; i < piece.length; i++) {
    const char = piece[i]
    if (char !== '?' && char !== name[at + i]) return false
  }
  return true
}

function findPiece(piece: string, name: string, from: number, end: number): number {
  for (let at = from; at + piece.length <= end; at++) if (pieceAt(piece, name, at)) return at
  return -1
}

export interface ToolVerdict {
  exposed: boolean
  /** Why a tool is hidden: the deny pattern that matches it, or the allow list that does not. */
  reason: string | null
}

/** Whether hosts get this tool: deny wins; with an allow list, only what it matches. */
export function toolVerdict(filter: ToolFilter | undefined, tool: string): ToolVerdict {
  const denied = filter?.deny?.find((pattern) => globMatches(pattern, tool))
  if (denied !== undefined) return { exposed: false, reason: `denied by "${denied}"` }
  const allow = filter?.allow
  if (allow && !allow.some((pattern) => globMatches(pattern, tool)))
    return { exposed: false, reason: allow.length === 0 ? 'the allow list is empty' : 'not in the allow list' }
  return { exposed: true, reason: null }
}

/** A filter with empty parts dropped (an empty allow list stays: it hides everything); none at all is undefined. */
export function normaliseFilter(filter: ToolFilter | undefined): ToolFilter | undefined {
  const allow = filter?.allow ? [...new Set(filter.allow)] : undefined
  const deny = filter?.deny?.length ? [...new Set(filter.deny)] : undefined
  if (!allow && !deny) return undefined
  return { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) }
}

/**
 * The filter after a person ticks (exposed) or unticks one tool, changing as little as it can: its own name is added
 * to or taken out of a list. A tool hidden by a deny pattern cannot be ticked on its own: that pattern must go first.
 */
export function withToolExposed(
  filter: ToolFilter | undefined,
  tool: string,
  exposed: boolean
): ToolFilter | undefined {
  const allow = filter?.allow ? filter.allow.filter((pattern) => !(exposed === false && pattern === tool)) : undefined
  let deny = (filter?.deny ?? []).filter((pattern) => !(exposed && pattern === tool))
  if (exposed) {
    const blocking = deny.find((pattern) => globMatches(pattern, tool))
    if (blocking !== undefined)
      throw new Error(`${tool} is denied by the pattern "${blocking}": remove that pattern to expose it`)
    const next = allow && !allow.some((pattern) => globMatches(pattern, tool)) ? [...allow, tool] : allow
    return normaliseFilter({ ...(next ? { allow: next } : {}), deny })
  }
  if (toolVerdict({ ...(allow ? { allow } : {}), deny }, tool).exposed) deny = [...deny, tool]
  return normaliseFilter({ ...(allow ? { allow } : {}), deny })
}
