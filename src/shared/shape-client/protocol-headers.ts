import { z } from 'zod'
import { detectBrand, protocolHeaderNames, type HeaderBrand } from '../protocol'

export type { HeaderBrand } from '../protocol'

export const ColumnSchemaSchema = z.looseObject({
  type: z.string(),
  dims: z.number().optional(),
  pk_index: z.number().optional(),
  not_null: z.boolean().optional()
})
export const ShapeSchemaSchema = z.record(z.string(), ColumnSchemaSchema)
export type ShapeSchema = z.infer<typeof ShapeSchemaSchema>

/** The protocol headers of one successful response, read under its brand. */
export interface ProtocolHeaders {
  brand: HeaderBrand | null
  handle: string | null
  offset: string | null
  cursor: string | null
  schema: string | null
  upToDate: boolean
}

export function readProtocolHeaders(headers: Headers, fallbackBrand: HeaderBrand | null): ProtocolHeaders {
  const brand = detectBrand(headers) ?? fallbackBrand
  const names = brand ? protocolHeaderNames(brand) : null
  const get = (name: keyof NonNullable<typeof names>) => (names ? headers.get(names[name]) : null)
  return {
    brand,
    handle: get('handle'),
    offset: get('offset'),
    cursor: get('cursor'),
    schema: get('schema'),
    upToDate: get('upToDate') !== null
  }
}
