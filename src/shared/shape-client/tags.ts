import type { MovePattern } from './messages'

/** Why a row of a subquery shape is in it: its tags (one per disjunct, split into slots) and each position's truth. */
export interface Membership {
  /** `tags[d][pos]`: the slot of disjunct d at position pos; '' when pos is not in that disjunct. */
  tags: string[][]
  activeConditions: boolean[]
}

/** A tag's slots. A tag without `/` is a pre-1.6 flat hash: position 0. */
export const tagSlots = (tag: string): string[] => tag.split('/')

/** The disjuncts that hold the row: those whose every used position is true. */
export function satisfiedDisjuncts({ tags, activeConditions }: Membership): number[] {
  return tags.flatMap((slots, disjunct) =>
    slots.every((slot, pos) => slot === '' || activeConditions[pos] === true) ? [disjunct] : []
  )
}

/** A row is in the shape when some disjunct holds it; no tags or no conditions: always. */
export const isIncluded = (membership: Membership): boolean =>
  membership.tags.length === 0 || membership.activeConditions.length === 0 || satisfiedDisjuncts(membership).length > 0

const slotKey = (pos: number, value: string) => `${pos}\u0000${value}`

/** Each row's membership, and which rows hold a given (position, hash) in a tag, for applying move patterns. */
export class TagIndex {
  private readonly byKey = new Map<string, Membership>()
  private readonly bySlot = new Map<string, Set<string>>()

  membership(key: string): Membership | null {
    return this.byKey.get(key) ?? null
  }

  /** Replaces a row's tags (its old tags leave the index, `removed_tags` among them) and conditions. */
  set(key: string, tags: readonly string[] | undefined, activeConditions: readonly boolean[] | undefined): void {
    this.delete(key)
    if (!tags && !activeConditions) return
    const membership: Membership = { tags: (tags ?? []).map(tagSlots), activeConditions: [...(activeConditions ?? [])] }
    this.byKey.set(key, membership)
    this.eachSlot(membership, (slot) => {
      const keys = this.bySlot.get(slot) ?? new Set<string>()
      keys.add(key)
      this.bySlot.set(slot, keys)
    })
  }

  setConditions(key: string, activeConditions: readonly boolean[]): void {
    const membership = this.byKey.get(key)
    if (membership) membership.activeConditions = [...activeConditions]
    else this.set(key, [], activeConditions)
  }

  delete(key: string): void {
    const membership = this.byKey.get(key)
    if (!membership) return
    this.byKey.delete(key)
    this.eachSlot(membership, (slot) => {
      const keys = this.bySlot.get(slot)
      keys?.delete(key)
      if (keys?.size === 0) this.bySlot.delete(slot)
    })
  }

  /** Sets position `pos` to `value` for every row whose tag holds a pattern; returns the rows touched. */
  flip(patterns: readonly MovePattern[], value: boolean): Set<string> {
    const touched = new Set<string>()
    for (const { pos, value: hash } of patterns) {
      for (const key of this.bySlot.get(slotKey(pos, hash)) ?? []) {
        const membership = this.byKey.get(key)
        if (!membership) continue
        membership.activeConditions[pos] = value
        touched.add(key)
      }
    }
    return touched
  }

  clear(): void {
    this.byKey.clear()
    this.bySlot.clear()
  }

  private eachSlot(membership: Membership, visit: (slot: string) => void): void {
    for (const slots of membership.tags) slots.forEach((slot, pos) => slot !== '' && visit(slotKey(pos, slot)))
  }
}
