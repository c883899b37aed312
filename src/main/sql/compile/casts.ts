import type { Node } from 'libpg-query'
import * as ast from '../ast'
import { WhereRuntimeError } from '../errors'
import {
  FLOAT8,
  INT4,
  INT8,
  NUMERIC,
  TEXT,
  type SqlType,
  builtinType,
  columnSqlType,
  isNumberType,
  parseValue,
  sameType,
  typeName
} from '../types'
import * as v from '../values'
import { strict } from './evaluate'
import { type CompileContext, type Typed, constant, fail } from './typed'

/** Casts: untyped literals given their type from context, implicit conversions to a common type, explicit `::type`. */

// The common per-row helpers, bound locally: tsx turns every use of an imported binding into a getter call.
const { checkIntRange, decimalFromInt } = v

/** Gives an untyped literal or placeholder its type from context, as Postgres does. */
export function coerce(ctx: CompileContext, node: Typed, type: SqlType): Typed {
  if (node.type.kind !== 'unknown' || type.kind === 'unknown') return node
  const literal = node.literal
  if (!literal || literal.text === null) return constant(type, null, node.location)
  try {
    return constant(type, parseValue(type, literal.text), node.location)
  } catch (error) {
    if (!(error instanceof WhereRuntimeError)) throw error
    if (literal.param !== undefined) {
      fail(
        ctx,
        `params[${literal.param}] (for $${literal.param}): ${error.message}`,
        node.location,
        `params[${literal.param}]`
      )
    }
    fail(ctx, error.message, node.location)
  }
}

export type Convert = (value: unknown) => unknown

/** Implicit and explicit conversions the evaluator reproduces exactly. */
export function converter(from: SqlType, to: SqlType, explicit: boolean): Convert | undefined {
  if (sameType(from, to)) return (x) => x
  switch (to.kind) {
    case 'int': {
      const name = to.name
      if (from.kind === 'int') return (x) => checkIntRange(x as bigint, name)
      if (!explicit) return undefined
      if (from.kind === 'numeric') return (x) => v.numericToInt(x as v.Numeric, name)
      if (from.kind === 'float') return (x) => v.floatToInt(x as number, name)
      if (from.kind === 'text') return (x) => v.parseInt(x as string, name)
      if (from.kind === 'bool' && name === 'int4') return (x) => (x ? 1n : 0n)
      return undefined
    }
    case 'numeric':
      if (from.kind === 'int') return (x) => decimalFromInt(x as bigint)
      if (explicit && from.kind === 'text') return (x) => v.parseNumeric(x as string)
      return undefined
    case 'float': {
      const round =
        to.name === 'float4' ? (x: number): number => v.checkFloat(Math.fround(x)) : (x: number): number => x
      if (from.kind === 'int') return (x) => round(Number(x as bigint))
      if (from.kind === 'numeric') return (x) => round(v.numericToFloat(x as v.Numeric))
      if (from.kind === 'float') return (x) => round(x as number)
      if (explicit && from.kind === 'text') return (x) => round(v.parseFloat8(x as string))
      return undefined
    }
    case 'timestamp':
      return from.kind === 'date' ? (x) => v.dateToTimestamp(x as number) : undefined
    case 'date':
      return explicit && from.kind === 'timestamp' ? (x) => v.timestampToDate(x as bigint) : undefined
    case 'text':
      if (!explicit) return undefined
      return textOutput(from)
    case 'bool':
      if (!explicit) return undefined
      if (from.kind === 'text') return (x) => v.parseBool(x as string)
      if (from.kind === 'int' && from.name === 'int4') return (x) => x !== 0n
      return undefined
    case 'uuid':
      return explicit && from.kind === 'text' ? (x) => v.parseUuid(x as string) : undefined
    case 'enum':
      return explicit && from.kind === 'text' && to.labels.length > 0 ? (x) => parseValue(to, x as string) : undefined
    default:
      return undefined
  }
}

/** `::text` for the types whose text output does not depend on session settings. */
function textOutput(from: SqlType): Convert | undefined {
  switch (from.kind) {
    case 'int':
      return (x) => (x as bigint).toString()
    case 'numeric':
      return (x) => v.numericToString(x as v.Numeric)
    case 'bool':
      return (x) => (x ? 'true' : 'false')
    case 'uuid':
    case 'enum':
    case 'text':
      return (x) => x
    case 'opaque':
      return from.name === 'json' || from.name === 'jsonb' ? (x) => x : undefined
    default:
      return undefined
  }
}

export function convert(node: Typed, to: SqlType, fn: Convert): Typed {
  if (sameType(node.type, to)) return node
  if (node.constant) return constant(to, node.constant.value === null ? null : fn(node.constant.value), node.location)
  return { type: to, evaluate: strict([node.evaluate], fn), ast: node.ast, location: node.location }
}

/** The type both sides of a comparison or arithmetic are brought to, per Postgres's implicit casts. */
export function commonType(a: SqlType, b: SqlType): SqlType | undefined {
  if (sameType(a, b)) return a
  if (a.kind === 'int' && b.kind === 'int')
    return a.name === 'int8' || b.name === 'int8' ? INT8 : a.name === 'int4' || b.name === 'int4' ? INT4 : a
  if (isNumberType(a) && isNumberType(b)) return a.kind === 'float' || b.kind === 'float' ? FLOAT8 : NUMERIC
  if ((a.kind === 'date' && b.kind === 'timestamp') || (a.kind === 'timestamp' && b.kind === 'date'))
    return { kind: 'timestamp' }
  return undefined
}

export function unify(
  ctx: CompileContext,
  operator: string,
  left: Typed,
  right: Typed,
  location: number | undefined
): [Typed, Typed, SqlType] {
  let l = left
  let r = right
  if (l.type.kind === 'unknown' && r.type.kind === 'unknown') {
    l = coerce(ctx, l, TEXT)
    r = coerce(ctx, r, TEXT)
  } else {
    l = coerce(ctx, l, r.type)
    r = coerce(ctx, r, l.type)
  }
  const type = commonType(l.type, r.type)
  const toLeft = type && converter(l.type, type, false)
  const toRight = type && converter(r.type, type, false)
  if (!type || !toLeft || !toRight) {
    fail(ctx, `operator does not exist: ${typeName(l.type)} ${operator} ${typeName(r.type)}`, location)
  }
  return [convert(l, type, toLeft), convert(r, type, toRight), type]
}

export function castTo(ctx: CompileContext, node: Typed, to: SqlType, location: number | undefined): Typed {
  if (node.type.kind === 'unknown') return { ...coerce(ctx, node, to), location }
  if (sameType(node.type, to)) return node
  const fn = converter(node.type, to, true)
  if (!fn) fail(ctx, `cast from ${typeName(node.type)} to ${typeName(to)} is not supported in where`, location)
  const converted = convert(node, to, fn)
  if (converted.constant) return converted
  return { ...converted, ast: to.kind === 'enum' ? enumCast(node.ast, to.name) : ast.cast(node.ast, to) }
}

function enumCast(arg: Node, name: string): Node {
  return { TypeCast: { arg, typeName: { names: [ast.str(name)], typemod: -1 } } }
}

/** Brings several expressions to one type (COALESCE, ARRAY[…], IN lists). */
export function unifyAll(
  ctx: CompileContext,
  nodes: Typed[],
  what: string,
  location: number | undefined
): [Typed[], SqlType] {
  let type: SqlType | undefined
  for (const node of nodes) {
    if (node.type.kind === 'unknown') continue
    const next: SqlType | undefined = type ? commonType(type, node.type) : node.type
    if (!next)
      fail(
        ctx,
        `${what} types ${typeName(type ?? node.type)} and ${typeName(node.type)} cannot be matched`,
        node.location
      )
    type = next
  }
  const target = type ?? TEXT
  const converted = nodes.map((node) => {
    const coerced = coerce(ctx, node, target)
    const fn = converter(coerced.type, target, false)
    if (!fn) fail(ctx, `${what} types ${typeName(coerced.type)} and ${typeName(target)} cannot be matched`, location)
    return convert(coerced, target, fn)
  })
  return [converted, target]
}

const TYPE_ALIASES: Readonly<Record<string, string>> = {
  integer: 'int4',
  int: 'int4',
  smallint: 'int2',
  bigint: 'int8',
  decimal: 'numeric',
  real: 'float4',
  'double precision': 'float8',
  boolean: 'bool',
  'character varying': 'varchar'
}

export function resolveTypeName(
  ctx: CompileContext,
  name: { names?: Node[]; typmods?: Node[]; arrayBounds?: Node[]; setof?: boolean; pct_type?: boolean } | undefined,
  location: number | undefined
): SqlType {
  const parts = (name?.names ?? []).map((part) => ('String' in part ? (part.String.sval ?? '') : ''))
  const last = parts[parts.length - 1] ?? ''
  const qualifiedOk = parts.length === 1 || (parts.length === 2 && parts[0] === 'pg_catalog')
  if (name?.typmods?.length) fail(ctx, `type modifiers are not supported in where casts: ${parts.join('.')}`, location)
  if (name?.setof || name?.pct_type) fail(ctx, 'unsupported type in cast', location)
  const resolved = Object.hasOwn(TYPE_ALIASES, last) ? (TYPE_ALIASES[last] ?? last) : last
  let type = qualifiedOk ? builtinType(resolved) : undefined
  if (!type && parts.length === 1) {
    const enumColumn = Object.values(ctx.columns).find((column) => column.category === 'enum' && column.type === last)
    if (enumColumn) type = columnSqlType(enumColumn)
  }
  if (!type) fail(ctx, `type ${parts.join('.')} is not supported in where casts`, location)
  if (name?.arrayBounds?.length) {
    if (name.arrayBounds.length > 1 || type.kind === 'enum')
      fail(ctx, `type ${parts.join('.')}[] is not supported in where casts`, location)
    return { kind: 'array', element: type }
  }
  return type
}
