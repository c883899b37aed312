import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { lookupColumn } from '../column-types'
import { WhereRuntimeError } from '../errors'
import { checkInputCaps } from '../input-caps'
import { type RowValues, slotOf } from '../row-values'
import { BOOL, INT4, INT8, NUMERIC, columnSqlType, parseValue } from '../types'
import * as v from '../values'
import { anyAll, arrayConstructor, arrayOperator } from './arrays'
import { castTo, resolveTypeName } from './casts'
import { perRow } from './evaluate'
import { checkFunctionCall, coalesce, functionCall } from './functions'
import { between, boolExpr, booleanTest, inList, nullTest, toBool } from './logic'
import { COMPARISONS, arithmetic, compare, distinctFrom, negate, nullif } from './operators'
import { likeExpr } from './pattern-match'
import { type CompileContext, type Typed, constant, fail, locationOf, unknownLiteral } from './typed'

/** The walk: each node of the where's parse tree compiled, operands first, then typed by the builder of its kind. */

/** Deeper expressions are refused before they can exhaust the stack of the compiler or the deparser. */
export const MAX_WHERE_DEPTH = 200

const SYSTEM_COLUMNS = new Set(['ctid', 'xmin', 'xmax', 'cmin', 'cmax', 'tableoid', 'oid'])

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
