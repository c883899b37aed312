import * as ast from '../ast'
import { like, likeMatcher } from '../like'
import { likeLiteral, probeValue } from '../probes'
import { BOOL, TEXT, typeName } from '../types'
import * as v from '../values'
import { coerce } from './casts'
import { type Evaluate, strict } from './evaluate'
import { caseFolded } from './functions'
import { type CompileContext, type Typed, fail } from './typed'

/** LIKE and ILIKE (and their NOT forms) under COLLATE "C". */

export function likeExpr(
  ctx: CompileContext,
  kind: 'AEXPR_LIKE' | 'AEXPR_ILIKE',
  operator: string,
  left: Typed,
  right: Typed,
  location: number | undefined
): Typed {
  const l = coerce(ctx, left, TEXT)
  const r = coerce(ctx, right, TEXT)
  if (l.type.kind !== 'text' || r.type.kind !== 'text') {
    fail(ctx, `operator does not exist: ${typeName(l.type)} ${operator} ${typeName(r.type)}`, location)
  }
  const insensitive = kind === 'AEXPR_ILIKE'
  const negated = operator.startsWith('!')
  const result: Typed = {
    type: BOOL,
    evaluate: r.constant
      ? constantLike(l, r.constant.value as string | null, insensitive, negated)
      : strict(
          [l.evaluate, r.evaluate],
          (value, pattern) => like(value as string, pattern as string, insensitive) !== negated
        ),
    ast: {
      A_Expr: { kind, name: [ast.str(operator)], lexpr: ast.collateC(l.ast), rexpr: r.ast }
    },
    location
  }
  const pattern = r.constant?.value
  if (negated || l.constant || typeof pattern !== 'string')
    return r.constant && pattern === null ? { ...result, probes: [] } : result
  const literal = likeLiteral(insensitive ? v.asciiLower(pattern) : pattern)
  if (literal === '') return result
  const subject = insensitive
    ? { type: TEXT, ast: ast.funcCall('lower', [ast.collateC(l.ast)]), evaluate: caseFolded(l, 'lower').evaluate }
    : l
  return { ...result, probes: [{ kind: 'contains', value: probeValue(subject), literal }] }
}

/** LIKE against a constant pattern, matched by a test built once; ILIKE reads the lowered value once per row. */
function constantLike(value: Typed, pattern: string | null, insensitive: boolean, negated: boolean): Evaluate {
  if (pattern === null) return () => null
  const matches = likeMatcher(insensitive ? v.asciiLower(pattern) : pattern)
  const subject = insensitive ? caseFolded(value, 'lower').evaluate : value.evaluate
  return strict([subject], (text) => matches(text as string) !== negated)
}
