import { type Node } from 'libpg-query'
import { withoutPositions } from './ast'
import { type RowValues } from './row-values'
import { type SqlType } from './types'
import * as v from './values'

/**
 * What an index can check about a changed row before any where is evaluated on it. A where's probes are alternatives:
 * every row the where matches passes at least one of them, so the router evaluates the where only on rows that pass
 * one. A probe may admit rows the where then refuses; it never refuses a row the where matches.
 */

/** A value of the row that many wheres test: read once per row for all of them. */
export interface ProbeValue {
  /** The same key always means the same expression read as the same type. */
  key: string
  type: SqlType
  read: (row: RowValues) => unknown
}

export type Probe =
  /** The value's key (see keyOf) is one of `keys`. */
  | { kind: 'keys'; value: ProbeValue; keys: readonly string[] }
  /** low ≤ orderNumber(value) ≤ high. */
  | { kind: 'range'; value: ProbeValue; low: number; high: number }
  /** The value (text) contains `literal`. */
  | { kind: 'contains'; value: ProbeValue; literal: string }
  | { kind: 'null'; value: ProbeValue }

/** Probes of which a matching row passes at least one; empty when no row can match. */
export type Alternatives = readonly Probe[]

type Probed = { type: SqlType; ast: Node; evaluate: (row: RowValues) => unknown }

/** Probe values already named, by expression: an IN list of thousands tests one expression thousands of times. */
const probeValues = new WeakMap<Probed, ProbeValue>()

/** The probe value of an expression: its evaluator, named by its type and parse tree. */
export function probeValue(node: Probed): ProbeValue {
  let value = probeValues.get(node)
  if (!value) {
    value = { key: JSON.stringify([node.type, withoutPositions(node.ast)]), type: node.type, read: node.evaluate }
    probeValues.set(node, value)
  }
  return value
}

/** Types whose equality (in the evaluator) is equality of keyOf. */
export function isKeyable(type: SqlType): boolean {
  return ['int', 'numeric', 'text', 'enum', 'uuid', 'bool', 'date', 'timestamp', 'timestamptz'].includes(type.kind)
}

/** Equal exactly when the evaluator compares the two values equal (floats too: -0 is 0, NaN is NaN). */
export function keyOf(type: SqlType, value: unknown): string {
  switch (type.kind) {
    case 'int':
      return (value as bigint).toString()
    case 'numeric':
      return v.canonicalNumber(value as v.Numeric)
    case 'bool':
      return value ? 't' : 'f'
    case 'float':
      return value === 0 ? '0' : String(value)
    default:
      return String(value)
  }
}

/** Types with an order that orderNumber maps onto numbers. */
export function isRangeable(type: SqlType): boolean {
  return ['int', 'numeric', 'float', 'date', 'timestamp', 'timestamptz'].includes(type.kind)
}

/**
 * A number that never reverses the evaluator's order of two values (a < b gives orderNumber(a) ≤ orderNumber(b)), so
 * inclusive bounds of such numbers admit every value a comparison admits. NaN sorts above every number, as in Postgres.
 */
export function orderNumber(type: SqlType, value: unknown): number {
  switch (type.kind) {
    case 'float':
      return Number.isNaN(value) ? Infinity : (value as number)
    case 'numeric':
      return value === 'NaN' || value === 'Infinity'
        ? Infinity
        : value === '-Infinity'
          ? -Infinity
          : Number(v.numericToString(value as v.Numeric))
    case 'date':
      return value as number
    default:
      return Number(value as bigint)
  }
}

/** The probe of `expression <operator> constant` (the expression on the left), if an index can check it. */
export function comparisonProbe(operator: string, expression: ProbeValue, constant: unknown): Alternatives | undefined {
  if (constant === null) return operator === '<>' ? undefined : []
  const type = expression.type
  if (operator === '=' && isKeyable(type)) return [{ kind: 'keys', value: expression, keys: [keyOf(type, constant)] }]
  if (!isRangeable(type) || operator === '<>') return undefined
  const bound = orderNumber(type, constant)
  const low = operator === '<' || operator === '<=' ? -Infinity : bound
  const high = operator === '>' || operator === '>=' ? Infinity : bound
  return [{ kind: 'range', value: expression, low, high }]
}

/** The operator that means the same with its operands swapped. */
export function mirrored(operator: string): string {
  return ({ '<': '>', '>': '<', '<=': '>=', '>=': '<=' } as Record<string, string>)[operator] ?? operator
}

/** The longest run of literal text in a LIKE pattern (every matching value contains it); '' when it has none. */
export function likeLiteral(pattern: string): string {
  let longest = ''
  let current = ''
  const chars = [...pattern]
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string
    if (char === '%' || char === '_') {
      current = ''
      continue
    }
    current += char === '\\' ? (chars[++i] ?? '') : char
    if (current.length > longest.length) longest = current
  }
  return longest
}

/** How many rows a probe may admit, roughly, relative to one equality key. */
function cost(probe: Probe): number {
  switch (probe.kind) {
    case 'keys':
      return probe.keys.length * (probe.value.type.kind === 'bool' ? 500 : 1)
    case 'range':
      return probe.low === probe.high ? 1 : 20
    case 'contains':
      return 1 + 40 / probe.literal.length
    default:
      return 40
  }
}

const totalCost = (alternatives: Alternatives): number => alternatives.reduce((sum, probe) => sum + cost(probe), 0)

/** The probes of an AND: any one operand's probes hold for it; ranges on one value are intersected. */
export function allOf(operands: ReadonlyArray<Alternatives | undefined>): Alternatives | undefined {
  const known = operands.filter((operand): operand is Alternatives => operand !== undefined)
  const ranges = new Map<string, Extract<Probe, { kind: 'range' }>>()
  const others: Alternatives[] = []
  for (const operand of known) {
    const [only] = operand
    if (operand.length !== 1 || only?.kind !== 'range') {
      others.push(operand)
      continue
    }
    const seen = ranges.get(only.value.key)
    ranges.set(
      only.value.key,
      seen ? { ...seen, low: Math.max(seen.low, only.low), high: Math.min(seen.high, only.high) } : only
    )
  }
  let best: Alternatives | undefined
  for (const candidate of [...others, ...[...ranges.values()].map((range) => [range])]) {
    if (!best || totalCost(candidate) < totalCost(best)) best = candidate
  }
  return best
}

/** The probes of an OR: those of all its operands, or none when one operand has none. */
export function anyOf(operands: ReadonlyArray<Alternatives | undefined>): Alternatives | undefined {
  if (operands.some((operand) => operand === undefined)) return undefined
  return operands.flatMap((operand) => operand ?? [])
}
