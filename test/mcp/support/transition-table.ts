import { expect, it } from 'vitest'

/** One row of a machine's whole table: phase, event, the phase it leads to (null: a fault) and its effects' kinds. */
export type TableRow<P extends string, K extends string> = [P, K, P | null, string[]]

interface Step {
  state: { phase: string }
  effects: readonly { kind: string }[]
}

/**
 * Tests a machine against its whole table: every (phase, event) pair named once, and each leads to the phase and
 * effects the row says, or throws `fault` where the row says null.
 */
export function itFollowsTheTable<P extends string, K extends string, S, E>(
  table: Array<TableRow<P, K>>,
  states: Record<P, S>,
  events: Record<K, E>,
  next: (state: S, event: E) => Step,
  fault: abstract new (...args: never[]) => Error
): void {
  it('the table names every phase and event once', () => {
    const pairs = table.map(([phase, kind]) => `${phase} ${kind}`)
    expect(new Set(pairs).size).toBe(pairs.length)
    expect(pairs.length).toBe(Object.keys(states).length * Object.keys(events).length)
  })

  it.each(table)('%s on %s → %s %j', (phase, kind, phaseAfter, effects) => {
    if (phaseAfter === null) {
      expect(() => next(states[phase], events[kind])).toThrow(fault)
      return
    }
    const step = next(states[phase], events[kind])
    expect(step.state.phase).toBe(phaseAfter)
    expect(step.effects.map((effect) => effect.kind)).toEqual(effects)
  })
}
