import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { lookupColumn } from '../column-types'
import { WhereRuntimeError } from '../errors'
import { checkInputCaps } from '../input-caps'
import { type Alternatives, allOf, anyOf, probeValue } from '../probes'
import { type RowValues, slotOf } from '../row-values'
import { BOOL, INT4, INT8, NUMERIC, TEXT, columnSqlType, parseValue, typeName } from '../types'
import * as v from '../values'
import { anyAll, arrayConstructor, arrayOperator } from './arrays'
import { castTo, coerce, resolveTypeName } from './casts'
import { type Evaluate, perRow } from './evaluate'
import { checkFunctionCall, coalesce, functionCall } from './functions'
import { COMPARISONS, arithmetic, compare, distinctFrom, negate, nullif } from './operators'
import { likeExpr } from './pattern-match'
import { type CompileContext, type Typed, constant, fail, locationOf, unknownLiteral } from './typed'

/** Deeper expressions are refused before they can exhaust the stack of the compiler or the deparser. */
export const MAX_WHERE_DEPTH = 200

const SYSTEM_COLUMNS = new Set(['ctid', 'xmin', 'xmax', 'cmin', 'cmax', 'tableoid', 'oid'])

// ---------- three-valued logic ----------

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
  return (row) => {
    const result = value(row)
    return result === null ? null : !result
  }
}

function toBool(ctx: CompileContext, node: Typed, what: string): Typed {
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

// ---------- the walk ----------

/** The whole where: a boolean, or an untyped literal or placeholder read as one. */
export function compileCondition(ctx: CompileContext, node: Node): Typed {
  checkInputCaps(node, ctx.params, ctx.offset)
  return toBool(ctx, compileNode(ctx, node), 'WHERE')
}

function compileNode(ctx: CompileContext, node: Node): Typed {
  if (ctx.depth >= MAX_WHERE_DEPTH)
    fail(ctx, `where is nested too deeply (more than ${MAX_WHERE_DEPTH} levels)`, locationOf(node))
  ctx.depth += 1
  try {
    return compileNodeKind(ctx, node)
  } finally {
    ctx.depth -= 1
  }
}

function compileNodeKind(ctx: CompileContext, node: Node): Typed {
  const location = locationOf(node)
  if ('A_Const' in node) return compileConst(ctx, node.A_Const, location)
  if ('ParamRef' in node) {
    const number = node.ParamRef.number ?? 0
    if (number < 1) fail(ctx, `there is no parameter $${number}`, location)
    ctx.usedParams.add(number)
    const key = String(number)
    if (!Object.hasOwn(ctx.params, key))
      fail(ctx, `parameter $${number} has no value: params[${number}] is missing`, location, `params[${number}]`)
    return unknownLiteral(ctx.params[key] ?? '', location, number)
  }
  if ('ColumnRef' in node) return compileColumn(ctx, node.ColumnRef.fields ?? [], location)
  if ('TypeCast' in node) {
    const arg = node.TypeCast.arg
    if (!arg) fail(ctx, 'cast without an argument', location)
    return castTo(ctx, compileNode(ctx, arg), resolveTypeName(ctx, node.TypeCast.typeName, location), location)
  }
  if ('A_Expr' in node) return compileAExpr(ctx, node.A_Expr, location)
  if ('BoolExpr' in node) return compileBoolExpr(ctx, node.BoolExpr, location)
  if ('NullTest' in node) {
    const arg = node.NullTest.arg
    if (!arg) fail(ctx, 'IS NULL without an argument', location)
    return nullTest(ctx, compileNode(ctx, arg), node.NullTest.nulltesttype, location)
  }
  if ('BooleanTest' in node) return compileBooleanTest(ctx, node.BooleanTest, location)
  if ('FuncCall' in node) return compileFunction(ctx, node.FuncCall, location)
  if ('CoalesceExpr' in node)
    return coalesce(
      ctx,
      (node.CoalesceExpr.args ?? []).map((arg) => compileNode(ctx, arg)),
      location
    )
  if ('A_ArrayExpr' in node)
    return arrayConstructor(
      ctx,
      (node.A_ArrayExpr.elements ?? []).map((element) => compileNode(ctx, element)),
      location
    )
  if ('SubLink' in node) fail(ctx, 'subqueries are not allowed in where', location)
  if ('CollateClause' in node)
    fail(ctx, 'COLLATE is not supported in where (text comparisons use the C collation)', location)
  if ('SQLValueFunction' in node)
    fail(ctx, 'functions of the current time or user are not allowed in where: they are not immutable', location)
  const kind = Object.keys(node)[0] ?? 'expression'
  const names: Record<string, string> = {
    CaseExpr: 'CASE',
    RowExpr: 'row constructors',
    A_Indirection: 'subscripts and field selection',
    MinMaxExpr: 'GREATEST/LEAST',
    A_Star: '*'
  }
  fail(ctx, `${names[kind] ?? kind} is not supported in where`, location)
}

function compileConst(
  ctx: CompileContext,
  value: NonNullable<Extract<Node, { A_Const: unknown }>['A_Const']>,
  location: number | undefined
): Typed {
  if (value.isnull) return unknownLiteral(null, location)
  if (value.ival) return constant(INT4, BigInt(value.ival.ival ?? 0), location)
  if (value.fval) {
    const text = value.fval.fval ?? '0'
    if (/^-?\d+$/.test(text)) {
      const integer = BigInt(text)
      if (integer >= -(2n ** 63n) && integer < 2n ** 63n) return constant(INT8, integer, location)
    }
    return constant(NUMERIC, v.parseNumeric(text), location)
  }
  if (value.sval) return unknownLiteral(value.sval.sval ?? '', location)
  if (value.boolval) return constant(BOOL, value.boolval.boolval ?? false, location)
  fail(ctx, 'bit-string literals are not supported in where', location)
}

function compileColumn(ctx: CompileContext, fields: Node[], location: number | undefined): Typed {
  const [field, ...rest] = fields
  if (!field || !('String' in field) || rest.length > 0) {
    if (field && 'A_Star' in field) fail(ctx, '* is not allowed in where', location)
    fail(
      ctx,
      'qualified column references are not allowed in where: use the bare column name of the shape table',
      location
    )
  }
  const name = field.String.sval ?? ''
  if (SYSTEM_COLUMNS.has(name)) fail(ctx, `system column "${name}" is not allowed in where`, location)
  const column = lookupColumn(ctx.columns, name)
  if (!column || (ctx.allowed && !ctx.allowed.has(name))) fail(ctx, `unknown column "${name}"`, location)
  ctx.referenced.add(name)
  const type = columnSqlType(column)
  const read = (row: RowValues): unknown => {
    const text = Object.hasOwn(row.text, name) ? row.text[name] : undefined
    if (text === undefined) throw new WhereRuntimeError(`the row has no value for column "${name}"`)
    return text === null ? null : parseValue(type, text)
  }
  const key = JSON.stringify([name, type])
  const slot = slotOf(key)
  return {
    type,
    evaluate: perRow((row) => row.once(slot, read)),
    ast: ast.columnRef(name),
    location,
    column: name,
    key
  }
}

function listItems(ctx: CompileContext, node: Node | undefined, location: number | undefined): Node[] {
  if (node && 'List' in node) return node.List.items ?? []
  fail(ctx, 'expected a list', location)
}

function betweenBounds(ctx: CompileContext, bounds: Node[], location: number | undefined): [Typed, Typed] {
  const [lowNode, highNode] = bounds
  if (!lowNode || !highNode || bounds.length !== 2) fail(ctx, 'BETWEEN needs two bounds', location)
  return [compileNode(ctx, lowNode), compileNode(ctx, highNode)]
}

function compileAExpr(
  ctx: CompileContext,
  expr: Extract<Node, { A_Expr: unknown }>['A_Expr'],
  location: number | undefined
): Typed {
  const names = expr.name ?? []
  const operatorNode = names[0]
  if (names.length !== 1 || !operatorNode || !('String' in operatorNode))
    fail(ctx, 'qualified operators are not supported in where', location)
  const operator = operatorNode.String.sval ?? ''
  const kind = expr.kind ?? 'AEXPR_OP'
  const right = (): Typed => {
    if (!expr.rexpr) fail(ctx, `operator ${operator} without a right operand`, location)
    return compileNode(ctx, expr.rexpr)
  }
  const left = (): Typed => {
    if (!expr.lexpr) fail(ctx, `operator ${operator} without a left operand`, location)
    return compileNode(ctx, expr.lexpr)
  }
  switch (kind) {
    case 'AEXPR_OP': {
      if (!expr.lexpr) {
        if (operator !== '-' && operator !== '+')
          fail(ctx, `prefix operator ${operator} is not supported in where`, location)
        return negate(ctx, right(), operator, location)
      }
      if (COMPARISONS.has(operator)) return compare(ctx, operator, left(), right(), location)
      if (['+', '-', '*', '/', '%', '||'].includes(operator))
        return arithmetic(ctx, operator, left(), right(), location)
      if (['@>', '<@', '&&'].includes(operator)) return arrayOperator(ctx, operator, left(), right(), location)
      return fail(ctx, `operator ${operator} is not supported in where`, location)
    }
    case 'AEXPR_LIKE':
    case 'AEXPR_ILIKE': {
      if (expr.rexpr && 'FuncCall' in expr.rexpr) fail(ctx, 'LIKE … ESCAPE is not supported in where', location)
      return likeExpr(ctx, kind, operator, left(), right(), location)
    }
    case 'AEXPR_OP_ANY':
    case 'AEXPR_OP_ALL':
      return anyAll(ctx, kind, operator, left(), right(), location)
    case 'AEXPR_DISTINCT':
    case 'AEXPR_NOT_DISTINCT':
      return distinctFrom(ctx, kind, left(), right(), location)
    case 'AEXPR_NULLIF':
      return nullif(ctx, left(), right(), location)
    case 'AEXPR_IN': {
      const value = left()
      const items = listItems(ctx, expr.rexpr, location).map((item) => compileNode(ctx, item))
      return inList(ctx, operator, value, items, location)
    }
    case 'AEXPR_BETWEEN':
    case 'AEXPR_NOT_BETWEEN':
    case 'AEXPR_BETWEEN_SYM':
    case 'AEXPR_NOT_BETWEEN_SYM': {
      const value = left()
      const [low, high] = betweenBounds(ctx, listItems(ctx, expr.rexpr, location), location)
      return between(ctx, kind, operator, value, low, high, location)
    }
    default:
      fail(ctx, `${kind === 'AEXPR_SIMILAR' ? 'SIMILAR TO' : 'this operator'} is not supported in where`, location)
  }
}

function inList(
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

function between(
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

function compileBoolExpr(
  ctx: CompileContext,
  expr: Extract<Node, { BoolExpr: unknown }>['BoolExpr'],
  location: number | undefined
): Typed {
  const boolop = expr.boolop
  const what = boolop === 'AND_EXPR' ? 'AND' : boolop === 'OR_EXPR' ? 'OR' : 'NOT'
  const args = (expr.args ?? []).map((arg) => toBool(ctx, compileNode(ctx, arg), what))
  return boolExpr(ctx, boolop, args, location)
}

/** AND, OR (flattened) and NOT of conditions. */
function boolExpr(ctx: CompileContext, boolop: string | undefined, args: Typed[], location: number | undefined): Typed {
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

function compileBooleanTest(
  ctx: CompileContext,
  expr: Extract<Node, { BooleanTest: unknown }>['BooleanTest'],
  location: number | undefined
): Typed {
  const test = expr.booltesttype
  if (!expr.arg) fail(ctx, 'IS TRUE without an argument', location)
  const arg = toBool(ctx, compileNode(ctx, expr.arg), `IS ${(test ?? '').replace(/^IS_/, '').replace('_', ' ')}`)
  return booleanTest(ctx, arg, test, location)
}

/** IS [NOT] TRUE / FALSE / UNKNOWN. */
function booleanTest(ctx: CompileContext, arg: Typed, test: string | undefined, location: number | undefined): Typed {
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

function compileFunction(
  ctx: CompileContext,
  call: Extract<Node, { FuncCall: unknown }>['FuncCall'],
  location: number | undefined
): Typed {
  const name = checkFunctionCall(ctx, call, location)
  return functionCall(
    ctx,
    name,
    (call.args ?? []).map((arg) => compileNode(ctx, arg)),
    location
  )
}

/** IS [NOT] NULL. */
function nullTest(
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
