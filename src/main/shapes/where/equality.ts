import { type SqlType, parseValue, sameType } from './types'
import * as v from './values'

/** How a column's values are normalised so that equal values (1, '1', 1.0; UUID case) share one key. */
export type IndexKeyKind = 'number' | 'text' | 'uuid' | 'bool' | 'date' | 'timestamp' | 'timestamptz'

/** A conjunct of a where: the row matches only if `column`'s key is one of `keys`. */
export interface EqualityIndexKey {
  column: string
  kind: IndexKeyKind
  keys: readonly string[]
}

/** The key kind when `column = constant` is compared as `comparison`, or undefined when equality is not plain key equality. */
export function indexKind(column: SqlType, comparison: SqlType): IndexKeyKind | undefined {
  if ((column.kind === 'int' || column.kind === 'numeric') && (comparison.kind === 'int' || comparison.kind === 'numeric')) {
    return 'number'
  }
  if (!sameType(column, comparison)) return undefined
  switch (column.kind) {
    case 'text':
    case 'enum':
      return 'text'
    case 'uuid':
    case 'bool':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
      return column.kind
    default:
      return undefined
  }
}

/** The key of a constant already in the evaluator's representation of `type`. */
export function keyOfValue(kind: IndexKeyKind, type: SqlType, value: unknown): string {
  switch (kind) {
    case 'number':
      return v.canonicalNumber(type.kind === 'int' ? v.decimalFromInt(value as bigint) : (value as v.Numeric))
    case 'bool':
      return value ? 't' : 'f'
    default:
      return String(value)
  }
}

const KIND_TYPES: Record<Exclude<IndexKeyKind, 'number' | 'text'>, SqlType> = {
  uuid: { kind: 'uuid' },
  bool: { kind: 'bool' },
  date: { kind: 'date' },
  timestamp: { kind: 'timestamp' },
  timestamptz: { kind: 'timestamptz' }
}

/** The key of a row's text value, or null when it has none (NULL or unreadable). */
export function keyOfText(kind: IndexKeyKind, text: string | null | undefined): string | null {
  if (text === null || text === undefined) return null
  try {
    if (kind === 'text') return text
    if (kind === 'number') return v.canonicalNumber(v.parseNumeric(text))
    const type = KIND_TYPES[kind]
    return keyOfValue(kind, type, parseValue(type, text))
  } catch {
    return null
  }
}
