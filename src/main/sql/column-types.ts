import { z } from 'zod'

export type ColumnCategory =
  'number' | 'text' | 'bool' | 'uuid' | 'timestamp' | 'date' | 'json' | 'array' | 'enum' | 'other'

/** The type of one column as the where compiler needs it. */
export interface ColumnType {
  /** The Postgres type name (`pg_type.typname`): int4, numeric, text, varchar, bool, uuid, timestamptz, date, jsonb, _text, an enum name… */
  type: string
  category: ColumnCategory
  /** Arrays only: the element's type name, e.g. `text` for `_text`. */
  elementType?: string
  /** Enums only: the labels in sort order. */
  enumLabels?: readonly string[]
}

export type ColumnTypes = Readonly<Record<string, ColumnType>>

export function lookupColumn(columns: ColumnTypes, name: string): ColumnType | undefined {
  return Object.hasOwn(columns, name) ? columns[name] : undefined
}

const columnTypeRowSchema = z.object({
  name: z.string(),
  type: z.string(),
  typtype: z.string(),
  typcategory: z.string(),
  element_type: z.string().nullable(),
  enum_labels: z.array(z.string()).nullable()
})

const CATEGORY_BY_TYPE: Readonly<Record<string, ColumnCategory>> = {
  int2: 'number',
  int4: 'number',
  int8: 'number',
  numeric: 'number',
  float4: 'number',
  float8: 'number',
  text: 'text',
  varchar: 'text',
  bool: 'bool',
  uuid: 'uuid',
  timestamp: 'timestamp',
  timestamptz: 'timestamp',
  date: 'date',
  json: 'json',
  jsonb: 'json'
}

/** Builds ColumnTypes from catalog rows (readCatalog's, in src/main/shapes/table-info.ts; validated here, as they cross a boundary). */
export function toColumnTypes(rows: readonly unknown[]): ColumnTypes {
  const columns: Record<string, ColumnType> = {}
  for (const raw of rows) {
    const row = columnTypeRowSchema.parse(raw)
    const category: ColumnCategory =
      row.typtype === 'e'
        ? 'enum'
        : row.typcategory === 'A' && row.element_type !== null
          ? 'array'
          : ((Object.hasOwn(CATEGORY_BY_TYPE, row.type) ? CATEGORY_BY_TYPE[row.type] : undefined) ?? 'other')
    const column: ColumnType = { type: row.type, category }
    if (category === 'array' && row.element_type !== null) column.elementType = row.element_type
    if (category === 'enum') column.enumLabels = row.enum_labels ?? []
    // defineProperty, not assignment, so a column named __proto__ stays an ordinary key
    Object.defineProperty(columns, row.name, { value: column, enumerable: true })
  }
  return columns
}
