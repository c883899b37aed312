import type { DependencyMoves, Overrides } from './views'

/** Values of one dependency that entered (or left) it in one transaction, which bring rows into the shape. */
export interface Move {
  dependency: number
  values: string[]
  entered: boolean
  xid: number
}

/** The view before a move-in: each of its values judged as it was before it moved. */
export function overridesOf(moves: readonly Move[]): Overrides {
  const overrides = new Map<number, Map<string, boolean>>()
  for (const move of moves) {
    const values = overrides.get(move.dependency) ?? new Map<string, boolean>()
    for (const value of move.values) values.set(value, !move.entered)
    overrides.set(move.dependency, values)
  }
  return overrides
}

/** A move-in's merged dependency moves as moves (for the view before them). */
export function movesOf(moves: readonly DependencyMoves[], xid: number): Move[] {
  return moves.flatMap(({ entered, left }, dependency) => [
    { dependency, values: entered, entered: true, xid },
    { dependency, values: left, entered: false, xid }
  ])
}

/** Takes out of unsent moves the values that now move back; returns the values that move for the client. */
export function cancelled(
  unsent: readonly Move[],
  dependency: number,
  values: readonly string[],
  entered: boolean
): string[] {
  const back = new Set<string>()
  for (const move of unsent) {
    if (move.dependency !== dependency || move.entered === entered) continue
    move.values = move.values.filter((value) => !(values.includes(value) && back.add(value)))
  }
  return values.filter((value) => !back.has(value))
}
