import { z } from 'zod'

/** The word that prefixes protocol header names: `service-offset` (the spec) or `electric-offset` (Electric). */
export const HeaderBrandSchema = z.enum(['service', 'electric'])
export type HeaderBrand = z.infer<typeof HeaderBrandSchema>
/** Every brand, in the order a response's brand is detected. */
export const HEADER_BRANDS: readonly HeaderBrand[] = ['electric', 'service']
export const DEFAULT_HEADER_BRAND: HeaderBrand = 'service'

/** The protocol header names without their brand: `handle` is sent as `service-handle` or `electric-handle`. */
export const PROTOCOL_HEADERS = [
  'handle',
  'offset',
  'schema',
  'cursor',
  'up-to-date',
  'has-data',
  'snapshot',
  'internal-known-error',
  'server'
] as const
export type ProtocolHeader = (typeof PROTOCOL_HEADERS)[number]

/** The full name of a protocol header under a brand: `headerName('service', 'offset')` is `service-offset`. */
export const headerName = (brand: HeaderBrand, header: ProtocolHeader): string => `${brand}-${header}`

/** Header names of the protocol under a brand, by what each carries. */
export function protocolHeaderNames(brand: HeaderBrand) {
  return {
    offset: headerName(brand, 'offset'),
    handle: headerName(brand, 'handle'),
    schema: headerName(brand, 'schema'),
    cursor: headerName(brand, 'cursor'),
    upToDate: headerName(brand, 'up-to-date'),
    hasData: headerName(brand, 'has-data'),
    snapshot: headerName(brand, 'snapshot'),
    knownError: headerName(brand, 'internal-known-error'),
    server: headerName(brand, 'server')
  } as const
}
export type ProtocolHeaderNames = ReturnType<typeof protocolHeaderNames>

/** Response headers a browser client must be allowed to read (`access-control-expose-headers`), `retry-after` included. */
export function exposedProtocolHeaders(names: ProtocolHeaderNames): string[] {
  return [
    names.cursor,
    names.handle,
    names.hasData,
    names.offset,
    names.schema,
    names.upToDate,
    names.knownError,
    RETRY_AFTER_HEADER
  ]
}
export const RETRY_AFTER_HEADER = 'retry-after'

/** A header lookup: the Fetch API's `Headers`, or a function over a plain record. */
type HeaderLookup = Pick<Headers, 'has'> | ((name: string) => boolean)

/** The brand of a response, from the protocol headers it carries; null when it carries none (e.g. an error). */
export function detectBrand(headers: HeaderLookup): HeaderBrand | null {
  const has = typeof headers === 'function' ? headers : (name: string) => headers.has(name)
  return HEADER_BRANDS.find((brand) => has(headerName(brand, 'handle')) || has(headerName(brand, 'offset'))) ?? null
}

/** Whether a header name is a protocol header of either brand (the UI highlights them). */
export const isProtocolHeader = (name: string): boolean =>
  HEADER_BRANDS.some((brand) => PROTOCOL_HEADERS.some((header) => name.toLowerCase() === headerName(brand, header)))
