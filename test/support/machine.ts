import type { Step } from '../../src/shared/machine'

/** Feeds a machine the events in order: the state reached and every effect it asked for on the way. */
export function replay<S, E, F>(
  step: (state: S, event: E) => Step<S, F>,
  from: S,
  events: readonly E[]
): { state: S; effects: F[] } {
  let state = from
  const effects: F[] = []
  for (const event of events) {
    const next = step(state, event)
    state = next.state
    effects.push(...next.effects)
  }
  return { state, effects }
}
