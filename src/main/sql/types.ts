import { type ColumnType } from './column-types'
import { WhereRuntimeError } from './errors'
import { formatArray, parseArray } from './arrays'
import * as v from './values'

/** The static type of an expression, as far as the evaluator models Postgres types. */
export type SqlType =
  | { kind: 'int'; name: v.IntName }
  | { kind: 'numeric' }
  | { kind: 'float'; name: 'float4' | 'float8' }
  | { kind: 'text' }
  | { kind: 'bool' }
  | { kind: 'uuid' }
  | { kind: 'date' }
  | { kind: 'timestamp' }
  | { kind: 'timestamptz' }
  | { kind: 'enum'; name: string; labels: readonly string[] }
  | { kind: 'array'; element: SqlType }
  /** json, jsonb and types the evaluator does not model: only IS [NOT] NULL (and ::text for json). */
  | { kind: 'opaque'; name: string }
  /** An untyped string literal or a `$n` placeholder before context gives it a type. */
  | { kind: 'unknown' }

export const INT4: SqlType = { kind: 'int', name: 'int4' }
export const INT8: SqlType = { kind: 'int', name: 'int8' }
export const NUMERIC: SqlType = { kind: 'numeric' }
export const FLOAT8: SqlType = { kind: 'float', name: 'float8' }
export const TEXT: SqlType = { kind: 'text' }
export const BOOL: SqlType = { kind: 'bool' }

const BUILTIN_TYPES: Readonly<Record<string, SqlType>> = {
  int2: { kind: 'int', name: 'int2' },
  int4: INT4,
  int8: INT8,
  numeric: NUMERIC,
  float4: { kind: 'float', name: 'float4' },
  float8: FLOAT8,
  text: TEXT,
  varchar: TEXT,
  bool: BOOL,
  uuid: { kind: 'uuid' },
  date: { kind: 'date' },
  timestamp: { kind: 'timestamp' },
  timestamptz: { kind: 'timestamptz' }
}

export function builtinType(name: string): SqlType | undefined {
  return Object.hasOwn(BUILTIN_TYPES, name) ? BUILTIN_TYPES[name] : undefined
}

export function columnSqlType(column: ColumnType): SqlType {
  if (column.category === 'enum') return { kind: 'enum', name: column.type, labels: column.enumLabels ?? [] }
  if (column.category === 'array' && column.elementType !== undefined) {
    const element = builtinType(column.elementType)
    return element ? { kind: 'array', element } : { kind: 'opaque', name: column.type }
  }
  return builtinType(column.type) ?? { kind: 'opaque', name: column.type }
}

/** The Postgres name of a type, used in messages and in casts of generated SQL. */
export function typeName(type: SqlType): string {
  switch (type.kind) {
    case 'int':
    case 'float':
    case 'enum':
    case 'opaque':
      return type.name
    case 'array':
      return `${typeName(type.element)}[]`
    default:
      return type.kind
  }
}

export function sameType(a: SqlType, b: SqlType): boolean {
  return typeName(a) === typeName(b)
}

/** Reads a value from Postgres text output (or from a literal) into the evaluator's representation. */
export function parseValue(type: SqlType, text: string): unknown {
  switch (type.kind) {
    case 'int':
      return v.parseInt(text, type.name)
    case 'numeric':
      return v.parseNumeric(text)
    case 'float':
      return type.name === 'float4' ? v.parseFloat4(text) : v.parseFloat8(text)
    case 'bool':
      return v.parseBool(text)
    case 'uuid':
      return v.parseUuid(text)
    case 'date':
      return v.parseDate(text)
    case 'timestamp':
      return v.parseTimestamp(text)
    case 'timestamptz':
      return v.parseTimestamptz(text)
    case 'enum':
      if (type.labels.length > 0 && !type.labels.includes(text)) {
        throw new WhereRuntimeError(`invalid input value for enum ${type.name}: "${text}"`)
      }
      return text
    case 'array': {
      const element = type.element
      return parseArray(text).map((item) => (item === null ? null : parseValue(element, item)))
    }
    default:
      return text
  }
}

/** The literal text of a value in generated SQL; parseValue(formatValue(x)) gives x back. */
export function formatValue(type: SqlType, value: unknown): string {
  switch (type.kind) {
    case 'int':
      return (value as bigint).toString()
    case 'numeric':
      return v.numericToString(value as v.Numeric)
    case 'float':
      return String(value as number)
    case 'bool':
      return value ? 'true' : 'false'
    case 'date':
      return v.formatDate(value as number)
    case 'timestamp':
      return v.formatTimestamp(value as bigint, false)
    case 'timestamptz':
      return v.formatTimestamp(value as bigint, true)
    case 'array': {
      const element = type.element
      return formatArray((value as unknown[]).map((item) => (item === null ? null : formatValue(element, item))))
    }
    default:
      return value as string
  }
}

export type Order = (a: unknown, b: unknown) => number

const compareDates: Order = (a, b) => Math.sign((a as number) - (b as number)) || 0
const compareBools: Order = (a, b) => Number(a) - Number(b)

/** How two non-null values of `type` are ordered (-1, 0 or 1), chosen once per expression rather than per row. */
export function comparator(type: SqlType): Order {
  switch (type.kind) {
    case 'int':
    case 'timestamp':
    case 'timestamptz':
      return v.compareBigint as Order
    case 'numeric':
      return v.compareNumeric as Order
    case 'float':
      return v.compareFloat as Order
    case 'date':
      return compareDates
    case 'bool':
      return compareBools
    default:
      return v.compareText as Order
  }
}

export function isNumberType(type: SqlType): boolean {
  return type.kind === 'int' || type.kind === 'numeric' || type.kind === 'float'
}

/** Types whose comparisons are only = and <> in the evaluator. */
export function isOrdered(type: SqlType): boolean {
  return type.kind !== 'enum' && type.kind !== 'array' && type.kind !== 'opaque'
}
