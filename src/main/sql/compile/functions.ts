import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { slotOf } from '../row-values'
import { INT4, TEXT, type SqlType, isNumberType, typeName } from '../types'
import * as v from '../values'
import { type Convert, coerce, unifyAll } from './casts'
import { perRow, strict } from './evaluate'
import { type CompileContext, type Typed, fail } from './typed'

/** The functions a where may call (lower, upper, length, abs) and COALESCE. */

// The common per-row helpers, bound locally: tsx turns every use of an imported binding into a getter call.
const { checkIntRange } = v

/** The immutable functions a where may call (besides COALESCE and NULLIF, which are syntax). */
export const ALLOWED_FUNCTIONS = ['lower', 'upper', 'length', 'char_length', 'character_length', 'abs'] as const

/** lower()/upper() under COLLATE "C"; of a column (or another shared expression) computed once per row. */
export function caseFolded(operand: Typed, name: 'lower' | 'upper'): Pick<Typed, 'evaluate' | 'key'> {
  const fold = name === 'lower' ? v.asciiLower : v.asciiUpper
  const evaluate = strict([operand.evaluate], (value) => fold(value as string))
  if (operand.key === undefined) return { evaluate }
  const key = `${name}(${operand.key})`
  const slot = slotOf(key)
  return { evaluate: perRow((row) => row.once(slot, evaluate)), key }
}

/** The name of an allowed function called plainly (no aggregate or window syntax). */
export function checkFunctionCall(
  ctx: CompileContext,
  call: Extract<Node, { FuncCall: unknown }>['FuncCall'],
  location: number | undefined
): string {
  const parts = (call.funcname ?? []).map((part) => ('String' in part ? (part.String.sval ?? '') : ''))
  const name = parts[parts.length - 1] ?? ''
  const qualifiedOk = parts.length === 1 || (parts.length === 2 && parts[0] === 'pg_catalog')
  const allowed =
    qualifiedOk && (ALLOWED_FUNCTIONS as readonly string[]).includes(name) && call.funcformat === 'COERCE_EXPLICIT_CALL'
  if (!allowed) {
    fail(
      ctx,
      `function ${parts.join('.')}() is not allowed in where; allowed functions: ${ALLOWED_FUNCTIONS.join(', ')}, coalesce, nullif`,
      location
    )
  }
  if (
    call.agg_star ||
    call.agg_distinct ||
    call.agg_order ||
    call.agg_filter ||
    call.over ||
    call.func_variadic ||
    call.agg_within_group
  ) {
    fail(ctx, `aggregate or window syntax is not allowed in where`, location)
  }
  return name
}

/** lower, upper, length (char_length, character_length) and abs of their one argument. */
export function functionCall(ctx: CompileContext, name: string, args: Typed[], location: number | undefined): Typed {
  const [first] = args
  if (!first || args.length !== 1) fail(ctx, `function ${name}() takes exactly one argument`, location)
  const unary = (operand: Typed, type: SqlType, fn: Convert, argAst: Node): Typed => ({
    type,
    evaluate: strict([operand.evaluate], fn),
    ast: ast.funcCall(name, [argAst]),
    location
  })
  if (name === 'abs') {
    if (!isNumberType(first.type)) fail(ctx, `function abs(${typeName(first.type)}) does not exist`, location)
    const type = first.type
    const fn: Convert =
      type.kind === 'int'
        ? (x) => checkIntRange((x as bigint) < 0n ? -(x as bigint) : (x as bigint), type.name)
        : type.kind === 'numeric'
          ? (x) =>
              (typeof x === 'object' && (x as v.Decimal).digits < 0n) || x === '-Infinity'
                ? v.negateNumeric(x as v.Numeric)
                : x
          : (x) => Math.abs(x as number)
    return unary(first, type, fn, first.ast)
  }
  const text = coerce(ctx, first, TEXT)
  if (text.type.kind !== 'text') fail(ctx, `function ${name}(${typeName(text.type)}) does not exist`, location)
  if (name === 'lower' || name === 'upper')
    return { type: TEXT, ...caseFolded(text, name), ast: ast.funcCall(name, [ast.collateC(text.ast)]), location }
  return unary(text, INT4, (x) => BigInt([...(x as string)].length), text.ast)
}

/** COALESCE: the first argument that is not NULL. */
export function coalesce(ctx: CompileContext, args: Typed[], location: number | undefined): Typed {
  const [converted, type] = unifyAll(ctx, args, 'COALESCE', location)
  const evaluators = converted.map((arg) => arg.evaluate)
  return {
    type,
    evaluate: perRow((row) => {
      for (const evaluate of evaluators) {
        const value = evaluate(row)
        if (value !== null) return value
      }
      return null
    }),
    ast: { CoalesceExpr: { args: converted.map((arg) => arg.ast) } },
    location
  }
}
