import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { arrayContainment } from '../arrays'
import { isKeyable, keyOf, probeValue } from '../probes'
import { BOOL, TEXT, type SqlType, comparator, isOrdered, sameType, typeName } from '../types'
import { type Convert, coerce, commonType, convert, converter, unifyAll } from './casts'
import { perRow, strict } from './evaluate'
import { comparisonTest, pinCollation } from './operators'
import { type CompileContext, type Typed, fail } from './typed'

/** Arrays in a where: `= ANY` / `ALL`, the containment and overlap operators, ARRAY[…]. */

interface ElementMatch {
  left: Typed
  type: SqlType
  toComparison: Convert
  test: (a: unknown, b: unknown) => boolean
}

function elementMatcher(
  ctx: CompileContext,
  operator: string,
  element: SqlType,
  left: Typed,
  location: number | undefined
): ElementMatch {
  const l = coerce(ctx, left, element)
  const type = commonType(l.type, element)
  const toLeft = type && converter(l.type, type, false)
  const toElement = type && converter(element, type, false)
  if (!type || !toLeft || !toElement)
    fail(ctx, `operator does not exist: ${typeName(l.type)} ${operator} ${typeName(element)}`, location)
  const test = comparisonTest(ctx, operator, type, location)
  return { left: convert(l, type, toLeft), type, toComparison: toElement, test: (a, b) => test(a, toElement(b)) }
}

export function anyAll(
  ctx: CompileContext,
  kind: 'AEXPR_OP_ANY' | 'AEXPR_OP_ALL',
  operator: string,
  left: Typed,
  right: Typed,
  location: number | undefined
): Typed {
  const arrayType: SqlType =
    right.type.kind === 'array'
      ? right.type
      : { kind: 'array', element: left.type.kind === 'unknown' ? TEXT : left.type }
  const r = coerce(ctx, right, arrayType)
  if (r.type.kind !== 'array') fail(ctx, `op ANY/ALL (array) requires array on right side`, location)
  const { left: l, type, toComparison, test } = elementMatcher(ctx, operator, r.type.element, left, location)
  const any = kind === 'AEXPR_OP_ANY'
  const result: Typed = {
    type: BOOL,
    evaluate: strict([l.evaluate, r.evaluate], (value, items) => {
      let sawNull = false
      for (const item of items as unknown[]) {
        if (item === null) sawNull = true
        else if (test(value, item) === any) return any
      }
      return sawNull ? null : !any
    }),
    ast: {
      A_Expr: {
        kind,
        name: [ast.str(operator)],
        lexpr: pinCollation(l.ast, type),
        rexpr: r.ast
      }
    },
    location
  }
  if (!any || operator !== '=' || l.constant || !r.constant || !isKeyable(type)) return result
  if (r.constant.value === null) return { ...result, probes: [] }
  const items = (r.constant.value as unknown[]).filter((item) => item !== null)
  return {
    ...result,
    probes: [{ kind: 'keys', value: probeValue(l), keys: items.map((item) => keyOf(type, toComparison(item))) }]
  }
}

export function arrayOperator(
  ctx: CompileContext,
  operator: string,
  left: Typed,
  right: Typed,
  location: number | undefined
): Typed {
  const l = coerce(ctx, left, right.type)
  const r = coerce(ctx, right, l.type)
  if (l.type.kind !== 'array' || r.type.kind !== 'array' || !sameType(l.type, r.type) || !isOrdered(l.type.element)) {
    fail(ctx, `operator does not exist: ${typeName(l.type)} ${operator} ${typeName(r.type)}`, location)
  }
  const element = l.type.element
  const test = arrayContainment(operator, comparator(element), (item) => keyOf(element, item))
  if (!test) fail(ctx, `operator ${operator} is not supported in where`, location)
  return {
    type: BOOL,
    evaluate: strict([l.evaluate, r.evaluate], (a, b) => test(a as unknown[], b as unknown[])),
    ast: ast.op(operator, pinCollation(l.ast, l.type), r.ast),
    location
  }
}

/** ARRAY[…] of elements brought to one type; a constant when every element is. */
export function arrayConstructor(ctx: CompileContext, elements: Typed[], location: number | undefined): Typed {
  if (elements.length === 0) fail(ctx, 'cannot determine type of empty array', location)
  const [converted, element] = unifyAll(ctx, elements, 'ARRAY', location)
  if (element.kind === 'array' || element.kind === 'opaque')
    fail(ctx, `arrays of ${typeName(element)} are not supported in where`, location)
  const evaluators = converted.map((item) => item.evaluate)
  const type: SqlType = { kind: 'array', element }
  const arrayAst: Node = { A_ArrayExpr: { elements: converted.map((item) => item.ast) } }
  if (converted.every((item) => item.constant)) {
    const value = converted.map((item) => item.constant?.value ?? null)
    return { type, evaluate: perRow(() => value), ast: arrayAst, location, constant: { value } }
  }
  return { type, evaluate: perRow((row) => evaluators.map((evaluate) => evaluate(row))), ast: arrayAst, location }
}
