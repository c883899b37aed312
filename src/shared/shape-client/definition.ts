import { z } from 'zod'
import type { HeaderBrand } from '../protocol'

/** A shape as a person composes it (the workbench's draft); turned into wire query parameters by `shapeParams`. */
export const ShapeDraftSchema = z.object({
  /** `name` or `schema.name`, quoted where needed, as the server parses it. */
  table: z.string().min(1, 'pick a table'),
  /** Empty: all columns. */
  columns: z.array(z.string().min(1)).default([]),
  where: z.string().default(''),
  /** Values for $1, $2, … in order. */
  params: z.array(z.string()).default([]),
  replica: z.enum(['default', 'full']).default('default'),
  log: z.enum(['full', 'changes_only']).default('full')
})
export type ShapeDraft = z.infer<typeof ShapeDraftSchema>

/** A column as the shape API reads it in `columns`: always quoted, so any spelling survives. */
export const quoteColumn = (column: string) => `"${column.replaceAll('"', '""')}"`

/** The definition's query parameters, in the form the official client sends them (each column quoted). */
export function shapeParams(definition: ShapeDraft): Record<string, string> {
  const params: Record<string, string> = { table: definition.table }
  if (definition.columns.length > 0) params.columns = definition.columns.map(quoteColumn).join(',')
  if (definition.where.trim()) params.where = definition.where
  definition.params.forEach((value, index) => (params[`params[${index + 1}]`] = value))
  if (definition.replica !== 'default') params.replica = definition.replica
  return params
}

export interface ShapeRequestTarget {
  /** The shape endpoint, e.g. http://127.0.0.1:3000/v1/shape */
  url: string
  headers: Record<string, string>
  /** Extra query parameters (a secret, a proxy's own parameters). */
  params: Record<string, string>
}

const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

/** The first request of the shape (`offset` -1 or now) as a curl command. */
export function curlCommand(definition: ShapeDraft, target: ShapeRequestTarget, offset: '-1' | 'now'): string {
  const url = new URL(target.url)
  for (const [name, value] of Object.entries({
    ...shapeParams(definition),
    ...target.params,
    offset,
    log: definition.log
  }))
    url.searchParams.set(name, value)
  url.searchParams.sort()
  const headers = Object.entries(target.headers).map(([name, value]) => ` \\\n  -H ${shellQuote(`${name}: ${value}`)}`)
  return `curl -i ${shellQuote(url.toString())}${headers.join('')}`
}

/** The same shape as code for `@electric-sql/client` (which reads `electric-*` headers). */
export function electricClientCode(
  definition: ShapeDraft,
  target: ShapeRequestTarget,
  options: { offset: '-1' | 'now'; live: 'off' | 'long-poll' | 'sse'; headerBrand?: HeaderBrand }
): string {
  const params: Record<string, unknown> = { table: definition.table, ...target.params }
  if (definition.columns.length > 0) params.columns = definition.columns
  if (definition.where.trim()) params.where = definition.where
  if (definition.params.length > 0) params.params = definition.params
  if (definition.replica !== 'default') params.replica = definition.replica
  const lines = [`  url: ${JSON.stringify(target.url)},`, `  params: ${indent(JSON.stringify(params, null, 2))},`]
  if (Object.keys(target.headers).length > 0)
    lines.push(`  headers: ${indent(JSON.stringify(target.headers, null, 2))},`)
  if (options.offset === 'now') lines.push(`  offset: 'now',`)
  if (definition.log !== 'full') lines.push(`  log: ${JSON.stringify(definition.log)},`)
  if (options.live === 'sse') lines.push('  liveSse: true,')
  if (options.live === 'off') lines.push('  subscribe: false,')
  const warning =
    options.headerBrand === 'service'
      ? [
          '// This server sends service-* headers; @electric-sql/client reads electric-*: serve with --header-brand electric.'
        ]
      : []
  if (SUBQUERY.test(definition.where)) warning.push(...SUBQUERY_WARNING)
  return [
    ...warning,
    `import { Shape, ShapeStream } from '@electric-sql/client'`,
    '',
    'const stream = new ShapeStream({',
    ...lines,
    '})',
    'const shape = new Shape(stream)',
    'shape.subscribe(({ rows }) => console.log(rows))',
    ''
  ].join('\n')
}

/** `… IN (SELECT …)`: the rows of such a shape move in and out with move events the `Shape` class does not apply. */
const SUBQUERY = /\bin\s*\(\s*select\b/i
const SUBQUERY_WARNING = [
  '// This where has a subquery: Shape ignores move-out / move-in events and keeps rows that moved out of the shape.',
  '// Read the stream with a client that applies them, e.g. electricCollectionOptions of @tanstack/electric-db-collection (TanStack DB).'
]

const indent = (json: string) => json.replaceAll('\n', '\n  ')
