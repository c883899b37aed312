import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { type ColumnTypes } from '../column-types'
import { WhereError } from '../errors'
import { type Alternatives } from '../probes'
import { type SqlType, formatValue } from '../types'
import { type Evaluate, perRow } from './evaluate'

/** A validated expression: its type, how to evaluate it, and the parse tree of the SQL that means the same. */
export interface Typed {
  type: SqlType
  evaluate: Evaluate
  ast: Node
  location: number | undefined
  /** Set while the type is unknown: an untyped literal or a placeholder. */
  literal?: { text: string | null; param?: number }
  /** Set for a bare column reference. */
  column?: string
  /** Names the value for RowValues.once, for expressions many wheres share: a column's typed value, lower(column). */
  key?: string
  /** Set for a compile-time constant. */
  constant?: { value: unknown }
  /** For conditions: what an index can check of a row this condition holds for (see probes.ts). */
  probes?: Alternatives
}

export interface CompileContext {
  columns: ColumnTypes
  allowed: ReadonlySet<string> | undefined
  params: Readonly<Record<string, string>>
  usedParams: Set<number>
  referenced: Set<string>
  /** Length of the text the parser saw before the user's where. */
  offset: number
  depth: number
}

export function fail(
  ctx: CompileContext,
  message: string,
  location: number | undefined,
  param?: WhereError['param']
): never {
  const position = location !== undefined && location >= 0 ? location - ctx.offset + 1 : undefined
  throw new WhereError(message, param ?? 'where', position)
}

export function locationOf(node: Node | undefined): number | undefined {
  if (!node) return undefined
  const inner = Object.values(node)[0] as { location?: number } | undefined
  return inner?.location
}

function constantAst(type: SqlType, value: unknown): Node {
  if (type.kind === 'enum') return value === null ? ast.nullConst() : ast.stringConst(value as string)
  if (type.kind === 'unknown') return value === null ? ast.nullConst() : ast.stringConst(value as string)
  if (value === null) return ast.cast(ast.nullConst(), type)
  if (type.kind === 'bool') return ast.boolConst(value as boolean)
  return ast.cast(ast.stringConst(formatValue(type, value)), type)
}

export function constant(type: SqlType, value: unknown, location: number | undefined): Typed {
  return { type, evaluate: perRow(() => value), ast: constantAst(type, value), location, constant: { value } }
}

export function unknownLiteral(text: string | null, location: number | undefined, param?: number): Typed {
  return {
    type: { kind: 'unknown' },
    evaluate: perRow(() => text),
    ast: text === null ? ast.nullConst() : ast.stringConst(text),
    location,
    literal: param === undefined ? { text } : { text, param }
  }
}
