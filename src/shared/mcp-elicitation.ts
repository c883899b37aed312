// Forms of elicitation/create, as main answers them and the MCP page shows them.

export type FormValue = string | number | boolean | string[]

const isFormValue = (value: unknown): value is FormValue =>
  ['string', 'number', 'boolean'].includes(typeof value) ||
  (Array.isArray(value) && value.every((item) => typeof item === 'string'))

/**
 * The `default` of each field of a requested schema (SEP-1034), of the kinds a form answers with; the page shows
 * them filled in and an answer that leaves a field out gets its default. They come from the server: the answer they
 * make up is checked against the schema like any other.
 */
export function formDefaults(schema: Record<string, unknown> | null): Record<string, FormValue> {
  const properties = schema?.properties
  if (!properties || typeof properties !== 'object') return {}
  return Object.fromEntries(
    Object.entries(properties as Record<string, unknown>).flatMap(([key, property]) => {
      const value = (property as { default?: unknown } | null)?.default
      return isFormValue(value) ? [[key, value] as const] : []
    })
  )
}
