/**
 * The one style of the project's state machines: a state is an immutable value with a `phase`, an event a value with a
 * `kind`, and a transition `(state, event) → { state, effects }` is pure. The class that owns the machine keeps the
 * state, feeds it events (what happened: a response, a timer, a failure) and carries out the effects it is given (what
 * to do: fetch, wait, log, acknowledge); it decides nothing itself. A transition the table lacks is a fault in the code.
 */
export interface Step<S, F> {
  readonly state: S
  readonly effects: readonly F[]
}

type Phased = { readonly phase: string }
type Kinded = { readonly kind: string }

/** The state in phase P: its member of a union of states, or the one state type (whose phase is a field). */
type InPhase<S extends Phased, P> = [Extract<S, { phase: P }>] extends [never] ? S : Extract<S, { phase: P }>

/** Per phase, per event kind, the transition; a missing entry refuses the event in that phase. */
export type TransitionTable<S extends Phased, E extends Kinded, F> = {
  readonly [P in S['phase']]: {
    readonly [K in E['kind']]?: (state: InPhase<S, P>, event: Extract<E, { kind: K }>) => Step<S, F>
  }
}

/** An event the machine's table refuses in its phase: a fault in the code, not in the data. */
export class MachineTransitionError extends Error {
  override readonly name = 'MachineTransitionError'
  constructor(
    readonly machine: string,
    readonly phase: string,
    readonly event: string
  ) {
    super(`${machine} cannot take ${event} in phase ${phase}`)
  }
}

/** The machine's next step; throws MachineTransitionError when the table has no transition for the event. */
export function stepMachine<S extends Phased, E extends Kinded, F>(
  machine: string,
  table: TransitionTable<S, E, F>,
  state: S,
  event: E
): Step<S, F> {
  const transitions = table[state.phase as S['phase']] as Record<string, ((s: S, e: E) => Step<S, F>) | undefined>
  const transition = transitions[event.kind]
  if (!transition) throw new MachineTransitionError(machine, state.phase, event.kind)
  return transition(state, event)
}

/** Whether the table has a transition for the event kind in the phase. */
export const accepts = <S extends Phased, E extends Kinded, F>(
  table: TransitionTable<S, E, F>,
  phase: S['phase'],
  kind: E['kind']
): boolean => (table[phase] as Record<string, unknown>)[kind] !== undefined

/** A step to `state` with `effects`, the state frozen (listeners may keep it). */
export const to = <S, F>(state: S, ...effects: F[]): Step<S, F> => ({ state: Object.freeze(state), effects })
