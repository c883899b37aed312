import { z } from 'zod'

/** The word that prefixes protocol header names: `service-offset` (the spec) or `electric-offset` (Electric). */
export type HeaderBrand = 'service' | 'electric'
export const HEADER_BRANDS: readonly HeaderBrand[] = ['electric', 'service']

export const PROTOCOL_HEADERS = ['handle', 'offset', 'schema', 'cursor', 'up-to-date', 'has-data', 'snapshot', 'internal-known-error', 'server'] as const

/** The brand of a response, from the protocol headers it carries; null when it carries none (e.g. an error). */
export function detectBrand(headers: Headers): HeaderBrand | null {
  return HEADER_BRANDS.find((brand) => headers.has(`${brand}-handle`) || headers.has(`${brand}-offset`)) ?? null
}

/** Whether a header name is a protocol header of either brand (the UI highlights them). */
export const isProtocolHeader = (name: string): boolean =>
  HEADER_BRANDS.some((brand) => PROTOCOL_HEADERS.some((header) => name.toLowerCase() === `${brand}-${header}`))

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
  const get = (name: string) => (brand ? headers.get(`${brand}-${name}`) : null)
  return {
    brand,
    handle: get('handle'),
    offset: get('offset'),
    cursor: get('cursor'),
    schema: get('schema'),
    upToDate: get('up-to-date') !== null
  }
}
