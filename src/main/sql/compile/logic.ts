import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { type Alternatives, allOf, anyOf, probeValue } from '../probes'
import { BOOL, TEXT, typeName } from '../types'
import { coerce } from './casts'
import { type Evaluate, perRow, strict } from './evaluate'
import { compare } from './operators'
import { type CompileContext, type Typed, fail } from './typed'

/** Conditions: AND, OR and NOT under three-valued logic, IS [NOT] TRUE/FALSE/UNKNOWN/NULL, IN lists and BETWEEN. */

/**
 * AND and OR under SQL's three-valued logic: `decisive` (false for AND, true for OR) decides at once; otherwise a NULL
 * operand makes the result NULL.
 */
function junction(values: readonly Evaluate[], decisive: boolean): Evaluate {
  const [first, second] = values
  if (values.length === 2 && first && second) {
    return (row) => {
      const a = first(row)
      if (a === decisive) return decisive
      const b = second(row)
      if (b === decisive) return decisive
      return a === null || b === null ? null : !decisive
    }
  }
  return (row) => {
    let sawNull = false
    for (const evaluate of values) {
      const value = evaluate(row)
      if (value === decisive) return decisive
      if (value === null) sawNull = true
    }
    return sawNull ? null : !decisive
  }
}

const and = (values: readonly Evaluate[]): Evaluate => junction(values, false)

const or = (values: readonly Evaluate[]): Evaluate => junction(values, true)

function not(value: Evaluate): Evaluate {
  return strict([value], (result) => !result)
}

export function toBool(ctx: CompileContext, node: Typed, what: string): Typed {
  const coerced = coerce(ctx, node, BOOL)
  if (coerced.type.kind !== 'bool')
    fail(ctx, `argument of ${what} must be type boolean, not type ${typeName(coerced.type)}`, node.location)
  return coerced
}

/** The probes of a condition; a bare boolean column is one too (`done` holds when done is true). */
export function conditionProbes(node: Typed): Alternatives | undefined {
  if (node.probes || node.column === undefined || node.type.kind !== 'bool') return node.probes
  return [{ kind: 'keys', value: probeValue(node), keys: ['t'] }]
}

export function inList(
  ctx: CompileContext,
  operator: string,
  left: Typed,
  compiledItems: Typed[],
  location: number | undefined
): Typed {
  const negated = operator === '<>'
  const firstTyped = compiledItems.find((item) => item.type.kind !== 'unknown')
  const l = left.type.kind === 'unknown' ? coerce(ctx, left, firstTyped?.type ?? TEXT) : left
  const tests = compiledItems.map((item) => compare(ctx, negated ? '<>' : '=', l, item, item.location))
  const evaluate = negated ? and(tests.map((test) => test.evaluate)) : or(tests.map((test) => test.evaluate))
  const sides = tests.map((test) => {
    if (!('A_Expr' in test.ast) || !test.ast.A_Expr.rexpr || !test.ast.A_Expr.lexpr)
      throw new Error('comparison builds an A_Expr')
    return { lexpr: test.ast.A_Expr.lexpr, rexpr: test.ast.A_Expr.rexpr }
  })
  const result: Typed = {
    type: BOOL,
    evaluate,
    ast: {
      A_Expr: {
        kind: 'AEXPR_IN',
        name: [ast.str(operator)],
        lexpr: sides[0]?.lexpr ?? l.ast,
        rexpr: { List: { items: sides.map((side) => side.rexpr) } }
      }
    },
    location
  }
  const probes = negated ? undefined : anyOf(tests.map((test) => test.probes))
  return probes ? { ...result, probes } : result
}

export function between(
  ctx: CompileContext,
  kind: string,
  operator: string,
  value: Typed,
  low: Typed,
  high: Typed,
  location: number | undefined
): Typed {
  const x =
    value.type.kind === 'unknown'
      ? coerce(ctx, value, low.type.kind !== 'unknown' ? low.type : high.type.kind !== 'unknown' ? high.type : TEXT)
      : value
  const ge = (bound: Typed): Typed => compare(ctx, '>=', x, bound, location)
  const le = (bound: Typed): Typed => compare(ctx, '<=', x, bound, location)
  const [geLow, leHigh, geHigh, leLow] = [ge(low), le(high), ge(high), le(low)]
  const forward = and([geLow.evaluate, leHigh.evaluate])
  const evaluate =
    kind === 'AEXPR_BETWEEN'
      ? forward
      : kind === 'AEXPR_NOT_BETWEEN'
        ? not(forward)
        : kind === 'AEXPR_BETWEEN_SYM'
          ? or([forward, and([geHigh.evaluate, leLow.evaluate])])
          : not(or([forward, and([geHigh.evaluate, leLow.evaluate])]))
  const rightOf = (test: Typed): Node => {
    if (!('A_Expr' in test.ast) || !test.ast.A_Expr.rexpr || !test.ast.A_Expr.lexpr)
      throw new Error('comparison builds an A_Expr')
    return test.ast.A_Expr.rexpr
  }
  const leftAst = 'A_Expr' in geLow.ast && geLow.ast.A_Expr.lexpr ? geLow.ast.A_Expr.lexpr : x.ast
  const result: Typed = {
    type: BOOL,
    evaluate,
    ast: {
      A_Expr: {
        kind: kind as 'AEXPR_BETWEEN',
        name: [ast.str(operator)],
        lexpr: leftAst,
        rexpr: { List: { items: [rightOf(geLow), rightOf(leHigh)] } }
      }
    },
    location
  }
  const forwardProbes = allOf([geLow.probes, leHigh.probes])
  const probes =
    kind === 'AEXPR_BETWEEN'
      ? forwardProbes
      : kind === 'AEXPR_BETWEEN_SYM'
        ? anyOf([forwardProbes, allOf([geHigh.probes, leLow.probes])])
        : undefined
  return probes ? { ...result, probes } : result
}

/** AND, OR (flattened) and NOT of conditions. */
export function boolExpr(
  ctx: CompileContext,
  boolop: string | undefined,
  args: Typed[],
  location: number | undefined
): Typed {
  if (boolop === 'NOT_EXPR') {
    const [arg] = args
    if (!arg || args.length !== 1) fail(ctx, 'NOT takes one argument', location)
    const result: Typed = {
      type: BOOL,
      evaluate: not(arg.evaluate),
      ast: { BoolExpr: { boolop: 'NOT_EXPR', args: [arg.ast] } },
      location
    }
    return arg.column === undefined
      ? result
      : { ...result, probes: [{ kind: 'keys', value: probeValue(arg), keys: ['f'] }] }
  }
  const op = boolop === 'AND_EXPR' ? 'AND_EXPR' : 'OR_EXPR'
  // nested ANDs (ORs) are flattened: one canonical form, and the text Postgres re-reads the same way
  const flatAsts = args.flatMap((arg) =>
    'BoolExpr' in arg.ast && arg.ast.BoolExpr.boolop === op ? (arg.ast.BoolExpr.args ?? []) : [arg.ast]
  )
  const evaluators = args.map((arg) => arg.evaluate)
  const result: Typed = {
    type: BOOL,
    evaluate: op === 'AND_EXPR' ? and(evaluators) : or(evaluators),
    ast: { BoolExpr: { boolop: op, args: flatAsts } },
    location
  }
  const probes = (op === 'AND_EXPR' ? allOf : anyOf)(args.map(conditionProbes))
  return probes ? { ...result, probes } : result
}

/** IS [NOT] TRUE / FALSE / UNKNOWN. */
export function booleanTest(
  ctx: CompileContext,
  arg: Typed,
  test: string | undefined,
  location: number | undefined
): Typed {
  const outcomes = new Map<string, (value: unknown) => boolean>([
    ['IS_TRUE', (x) => x === true],
    ['IS_NOT_TRUE', (x) => x !== true],
    ['IS_FALSE', (x) => x === false],
    ['IS_NOT_FALSE', (x) => x !== false],
    ['IS_UNKNOWN', (x) => x === null],
    ['IS_NOT_UNKNOWN', (x) => x !== null]
  ])
  const outcome = test === undefined ? undefined : outcomes.get(test)
  if (!outcome || !test) fail(ctx, 'unsupported boolean test', location)
  const inner = arg.evaluate
  const result: Typed = {
    type: BOOL,
    evaluate: perRow((row) => outcome(inner(row))),
    ast: { BooleanTest: { arg: arg.ast, booltesttype: test as 'IS_TRUE' } },
    location
  }
  const probes = test === 'IS_TRUE' ? conditionProbes(arg) : undefined
  return probes ? { ...result, probes } : result
}

/** IS [NOT] NULL. */
export function nullTest(
  ctx: CompileContext,
  arg: Typed,
  nulltesttype: Extract<Node, { NullTest: unknown }>['NullTest']['nulltesttype'],
  location: number | undefined
): Typed {
  const operand = coerce(ctx, arg, TEXT)
  const isNull = nulltesttype === 'IS_NULL'
  const inner = operand.evaluate
  const result: Typed = {
    type: BOOL,
    evaluate: perRow((row) => (inner(row) === null) === isNull),
    ast: { NullTest: { arg: operand.ast, nulltesttype } },
    location
  }
  return isNull && !operand.constant ? { ...result, probes: [{ kind: 'null', value: probeValue(operand) }] } : result
}
