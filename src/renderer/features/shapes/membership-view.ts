import { satisfiedDisjuncts, type Membership } from '../../../shared/shape-client'

export interface SlotView {
  pos: number
  /** A subquery atom carries the hash of the row's value; a plain atom `1`. */
  kind: 'subquery' | 'plain'
  hash: string | null
  active: boolean
}

export interface DisjunctView {
  /** 1-based, as the rows table shows it. */
  number: number
  holds: boolean
  slots: SlotView[]
}

/**
 * A row's tags read as the where's disjuncts: which positions each uses, whether each holds. Tags without
 * active_conditions (a server before protocol 1.6) keep the row in until a move-out, as isIncluded reads them: every
 * condition holds.
 */
export function disjunctsOf(membership: Membership): DisjunctView[] {
  const known = membership.activeConditions.length > 0
  const holding = new Set(known ? satisfiedDisjuncts(membership) : membership.tags.keys())
  return membership.tags.map((slots, index) => ({
    number: index + 1,
    holds: holding.has(index),
    slots: slots.flatMap((slot, pos) =>
      slot === ''
        ? []
        : [
            {
              pos,
              kind: slot === '1' ? ('plain' as const) : ('subquery' as const),
              hash: slot === '1' ? null : slot,
              active: !known || membership.activeConditions[pos] === true
            }
          ]
    )
  }))
}

/** The rows table's "in by" cell: the disjuncts that hold the row, e.g. `#1` or `#1 #3`; `—` when none (it is leaving). */
export function inBySummary(membership: Membership | null): string {
  if (!membership) return ''
  if (membership.tags.length === 0) return 'always'
  const holding = disjunctsOf(membership).filter((disjunct) => disjunct.holds)
  return holding.length === 0 ? '—' : holding.map((disjunct) => `#${disjunct.number}`).join(' ')
}

/** A tag hash shortened for display (the whole one is in the title). */
export const shortHash = (hash: string) => (hash.length > 10 ? `${hash.slice(0, 8)}…` : hash)
