import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { WhereRuntimeError } from '../errors'
import { type Alternatives, comparisonProbe, mirrored, probeValue } from '../probes'
import { BOOL, FLOAT8, type Order, TEXT, type SqlType, comparator, isNumberType, isOrdered, typeName } from '../types'
import * as v from '../values'
import { type Convert, coerce, convert, converter, unify } from './casts'
import { perRow, strict } from './evaluate'
import { type CompileContext, type Typed, fail } from './typed'

/** Operators of scalars: comparisons, IS DISTINCT FROM, NULLIF, arithmetic, ||, unary minus. */

// The common per-row helpers, bound locally: tsx turns every use of an imported binding into a getter call.
const { checkIntRange } = v

type Test = (a: unknown, b: unknown) => boolean

/**
 * Each operator's test of two values under a type's order, built per type so that a comparison's per-row work is one
 * call (see strict); a Map, so that its functions run unnamed per row (see perRow).
 */
export const COMPARISONS: ReadonlyMap<string, (order: Order) => Test> = new Map([
  ['=', (order: Order) => (a: unknown, b: unknown) => order(a, b) === 0],
  ['<>', (order: Order) => (a: unknown, b: unknown) => order(a, b) !== 0],
  ['<', (order: Order) => (a: unknown, b: unknown) => order(a, b) < 0],
  ['<=', (order: Order) => (a: unknown, b: unknown) => order(a, b) <= 0],
  ['>', (order: Order) => (a: unknown, b: unknown) => order(a, b) > 0],
  ['>=', (order: Order) => (a: unknown, b: unknown) => order(a, b) >= 0]
])

export function comparisonTest(
  ctx: CompileContext,
  operator: string,
  type: SqlType,
  location: number | undefined
): Test {
  const test = COMPARISONS.get(operator)
  if (!test) fail(ctx, `operator ${operator} is not supported in where`, location)
  if (type.kind === 'opaque' || type.kind === 'array')
    fail(ctx, `operator ${operator} is not supported for type ${typeName(type)}`, location)
  if (!isOrdered(type) && operator !== '=' && operator !== '<>') {
    fail(
      ctx,
      `operator ${operator} is not supported for type ${typeName(type)} in where (only = and <>); cast to text to compare labels`,
      location
    )
  }
  return test(comparator(type))
}

/** `expression <operator> constant` (either way round, after unification) as probes. */
function comparisonProbes(operator: string, left: Typed, right: Typed): Alternatives | undefined {
  if (right.constant && !left.constant) return comparisonProbe(operator, probeValue(left), right.constant.value)
  if (left.constant && !right.constant)
    return comparisonProbe(mirrored(operator), probeValue(right), left.constant.value)
  return undefined
}

/**
 * Text comparisons (order, equality, LIKE, array membership) depend on the collation, and a nondeterministic one makes
 * `'abc' = 'ABC'` true; the generated SQL pins C, the code-point order and byte equality the evaluator uses.
 */
export function pinCollation(node: Node, type: SqlType): Node {
  const text = type.kind === 'text' || (type.kind === 'array' && type.element.kind === 'text')
  return text ? ast.collateC(node) : node
}

export function compare(
  ctx: CompileContext,
  operator: string,
  left: Typed,
  right: Typed,
  location: number | undefined
): Typed {
  const [l, r, type] = unify(ctx, operator, left, right, location)
  const result: Typed = {
    type: BOOL,
    evaluate: strict([l.evaluate, r.evaluate], comparisonTest(ctx, operator, type, location)),
    ast: ast.op(operator, pinCollation(l.ast, type), r.ast),
    location
  }
  const probes = comparisonProbes(operator, l, r)
  return probes ? { ...result, probes } : result
}

export function arithmetic(
  ctx: CompileContext,
  operator: string,
  left: Typed,
  right: Typed,
  location: number | undefined
): Typed {
  if (operator === '||') return concat(ctx, left, right, location)
  if (left.type.kind === 'unknown' && right.type.kind === 'unknown')
    fail(ctx, `operator is not unique: unknown ${operator} unknown`, location)
  const l0 = coerce(ctx, left, right.type)
  const r0 = coerce(ctx, right, l0.type)
  if (!isNumberType(l0.type) || !isNumberType(r0.type)) {
    fail(ctx, `operator does not exist: ${typeName(l0.type)} ${operator} ${typeName(r0.type)}`, location)
  }
  // float4 arithmetic rounds to single precision; the generated SQL computes in float8, as the evaluator does
  const widen = (node: Typed): Typed =>
    node.type.kind === 'float' && node.type.name === 'float4'
      ? { ...node, type: FLOAT8, ast: ast.cast(node.ast, FLOAT8) }
      : node
  const [l, r, type] = unify(ctx, operator, widen(l0), widen(r0), location)
  const apply = arithmeticOperation(ctx, operator, type, location)
  return {
    type,
    evaluate: strict([l.evaluate, r.evaluate], apply),
    ast: ast.op(operator, l.ast, r.ast),
    location
  }
}

const divisionByZero = v.divisionByZero

function arithmeticOperation(
  ctx: CompileContext,
  operator: string,
  type: SqlType,
  location: number | undefined
): (a: unknown, b: unknown) => unknown {
  if (type.kind === 'int') {
    const name = type.name
    const intOps = new Map<string, (a: bigint, b: bigint) => bigint>([
      ['+', (a, b) => a + b],
      ['-', (a, b) => a - b],
      ['*', (a, b) => a * b],
      ['/', (a, b) => (b === 0n ? divisionByZero() : a / b)],
      ['%', (a, b) => (b === 0n ? divisionByZero() : a % b)]
    ])
    const fn = intOps.get(operator)
    if (!fn) fail(ctx, `operator ${operator} is not supported for ${name}`, location)
    return (a, b) => checkIntRange(fn(a as bigint, b as bigint), name)
  }
  if (type.kind === 'numeric') {
    if (operator === '+') return (a, b) => v.addNumeric(a as v.Numeric, b as v.Numeric, 1n)
    if (operator === '-') return (a, b) => v.addNumeric(a as v.Numeric, b as v.Numeric, -1n)
    if (operator === '*') return (a, b) => v.multiplyNumeric(a as v.Numeric, b as v.Numeric)
    if (operator === '%') return (a, b) => v.moduloNumeric(a as v.Numeric, b as v.Numeric)
    fail(
      ctx,
      `operator ${operator} on numeric is not supported in where (its result scale is not reproduced); cast to float8`,
      location
    )
  }
  const floatOps = new Map<string, (a: number, b: number) => number>([
    ['+', (a, b) => a + b],
    ['-', (a, b) => a - b],
    ['*', (a, b) => a * b],
    ['/', (a, b) => (b === 0 ? divisionByZero() : a / b)]
  ])
  const fn = floatOps.get(operator)
  if (!fn) fail(ctx, `operator ${operator} is not supported for float8`, location)
  return (a, b) => {
    const x = a as number
    const y = b as number
    const result = fn(x, y)
    if (!Number.isFinite(result) && Number.isFinite(x) && Number.isFinite(y))
      throw new WhereRuntimeError('value out of range: overflow')
    if (result === 0 && x !== 0 && (operator === '*' || operator === '/'))
      throw new WhereRuntimeError('value out of range: underflow')
    return result
  }
}

function concat(ctx: CompileContext, left: Typed, right: Typed, location: number | undefined): Typed {
  const asText = (node: Typed): Typed => {
    const coerced = coerce(ctx, node, TEXT)
    const fn = coerced.type.kind === 'array' ? undefined : converter(coerced.type, TEXT, true)
    if (!fn) fail(ctx, `operator || is not supported for type ${typeName(coerced.type)} in where`, node.location)
    return convert(coerced, TEXT, fn)
  }
  if (
    left.type.kind !== 'text' &&
    left.type.kind !== 'unknown' &&
    right.type.kind !== 'text' &&
    right.type.kind !== 'unknown'
  ) {
    fail(ctx, `operator does not exist: ${typeName(left.type)} || ${typeName(right.type)}`, location)
  }
  const l = asText(left)
  const r = asText(right)
  return {
    type: TEXT,
    evaluate: strict([l.evaluate, r.evaluate], (a, b) => (a as string) + (b as string)),
    ast: ast.op(
      '||',
      left.type.kind === 'unknown' ? l.ast : left.ast,
      right.type.kind === 'unknown' ? r.ast : right.ast
    ),
    location
  }
}

export function negate(ctx: CompileContext, operand: Typed, operator: string, location: number | undefined): Typed {
  if (!isNumberType(operand.type)) fail(ctx, `operator does not exist: ${operator} ${typeName(operand.type)}`, location)
  const type = operand.type
  const fn: Convert =
    operator === '+'
      ? (x) => x
      : type.kind === 'int'
        ? (x) => checkIntRange(-(x as bigint), type.name)
        : type.kind === 'numeric'
          ? (x) => v.negateNumeric(x as v.Numeric)
          : (x) => -(x as number)
  return {
    type,
    evaluate: strict([operand.evaluate], fn),
    ast: ast.op(operator, undefined, operand.ast),
    location
  }
}

/** IS [NOT] DISTINCT FROM: equality under which NULL equals NULL. */
export function distinctFrom(
  ctx: CompileContext,
  kind: 'AEXPR_DISTINCT' | 'AEXPR_NOT_DISTINCT',
  left: Typed,
  right: Typed,
  location: number | undefined
): Typed {
  const [l, r, type] = unify(ctx, '=', left, right, location)
  comparisonTest(ctx, '=', type, location)
  const distinct = kind === 'AEXPR_DISTINCT'
  const order = comparator(type)
  const [lhs, rhs] = [l.evaluate, r.evaluate]
  return {
    type: BOOL,
    evaluate: perRow((row) => {
      const a = lhs(row)
      const b = rhs(row)
      const same = a === null || b === null ? a === b : order(a, b) === 0
      return same !== distinct
    }),
    ast: { A_Expr: { kind, name: [ast.str('=')], lexpr: pinCollation(l.ast, type), rexpr: r.ast } },
    location
  }
}

/** NULLIF(a, b): NULL when a equals b, else a. */
export function nullif(ctx: CompileContext, left: Typed, right: Typed, location: number | undefined): Typed {
  const [l, r, type] = unify(ctx, '=', left, right, location)
  comparisonTest(ctx, '=', type, location)
  const order = comparator(type)
  const [lhs, rhs] = [l.evaluate, r.evaluate]
  return {
    type,
    evaluate: perRow((row) => {
      const a = lhs(row)
      const b = rhs(row)
      return a !== null && b !== null && order(a, b) === 0 ? null : a
    }),
    ast: { A_Expr: { kind: 'AEXPR_NULLIF', name: [ast.str('=')], lexpr: pinCollation(l.ast, type), rexpr: r.ast } },
    location
  }
}
