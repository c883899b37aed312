import { z } from 'zod'
import { IdentifierError, WhereError, parseTableName } from '../sql'
import { parseWhere, type WhereTree } from './where-tree'

/** The shape a token or a named shape pins: what the proxy, not the client, puts in the upstream URL. */
export const PinnedShapeSchema = z
  .object({
    table: z.string().min(1),
    columns: z.array(z.string().min(1)).min(1).nullable().default(null),
    where: z.string().min(1).nullable().default(null),
    params: z.record(z.string().regex(/^[1-9]\d*$/), z.string()).default({}),
    replica: z.enum(['default', 'full']).default('default'),
    queryable_columns: z.array(z.string().min(1)).min(1).nullable().default(null)
  })
  .strict()
export type PinnedShape = z.infer<typeof PinnedShapeSchema>

/** A shape with every spelling choice removed: two definitions of one shape have equal keys. */
export interface CanonicalShape {
  schema: string
  name: string
  columns: string[] | null
  where: string | null
  params: Record<string, string>
  replica: 'default' | 'full'
  queryableColumns: string[] | null
}

export class ShapeDefinitionError extends Error {
  override readonly name = 'ShapeDefinitionError'
  constructor(
    readonly field: string,
    readonly detail: string
  ) {
    super(`${field}: ${detail}`)
  }
}

const SIMPLE_IDENTIFIER = /^[a-z_][a-z0-9_]*$/

/** Quotes an identifier only where Postgres needs it, as people write it: `issues`, `"UserSettings"`. */
export function identifierText(name: string): string {
  return SIMPLE_IDENTIFIER.test(name) ? name : `"${name.replaceAll('"', '""')}"`
}

export function tableText(shape: Pick<CanonicalShape, 'schema' | 'name'>): string {
  return shape.schema === 'public'
    ? identifierText(shape.name)
    : `${identifierText(shape.schema)}.${identifierText(shape.name)}`
}

/** Splits `a,"B",c` on commas outside double quotes and folds each entry by Postgres identifier rules. */
export function parseColumnList(text: string): string[] {
  const entries: string[] = []
  let current = ''
  let quoted = false
  for (const char of text) {
    if (char === '"') quoted = !quoted
    if (char === ',' && !quoted) {
      entries.push(current)
      current = ''
    } else current += char
  }
  entries.push(current)
  return entries.map((entry) => parseColumnName(entry.trim()))
}

/** `parseColumnList` for a client's text: a bad entry is a ShapeDefinitionError naming `columns`. */
export function readColumnList(text: string): string[] {
  return readField('columns', () => parseColumnList(text))
}

/** One identifier (`title`, `"userId"`), read by the relation parser under a dummy schema so that `a.b` is refused. */
function parseColumnName(entry: string): string {
  if (entry === '') throw new IdentifierError('Invalid zero-length delimited identifier')
  try {
    return parseTableName(`"c".${entry}`).name
  } catch (error) {
    if (error instanceof IdentifierError && error.message.includes('too many delimiters'))
      throw new IdentifierError(`a column name is one identifier: ${entry}`)
    throw error
  }
}

function canonicalColumns(field: string, columns: readonly string[] | null): string[] | null {
  if (columns === null) return null
  const unique = [...new Set(columns)].sort()
  if (unique.length !== columns.length) throw new ShapeDefinitionError(field, 'a column is listed twice')
  return unique
}

/** The params in order, each used by a placeholder and each placeholder given; throws ShapeDefinitionError naming `params`. */
export function canonicalParams(
  params: Readonly<Record<string, string>>,
  placeholders: ReadonlySet<number>
): Record<string, string> {
  const keys = Object.keys(params)
    .map(Number)
    .sort((a, b) => a - b)
  keys.forEach((key, index) => {
    if (key !== index + 1)
      throw new ShapeDefinitionError('params', 'parameters must be numbered sequentially, starting from 1')
  })
  for (const used of placeholders)
    if (!Object.hasOwn(params, String(used)))
      throw new ShapeDefinitionError('params', `where uses $${used} but params[${used}] is not given`)
  for (const key of keys)
    if (!placeholders.has(key))
      throw new ShapeDefinitionError('params', `params[${key}] is not used: where has no $${key}`)
  return Object.fromEntries(keys.map((key) => [String(key), params[String(key)] as string]))
}

/** Runs one field's parser, naming the field in any error it raises. */
function readField<T>(field: string, read: () => T): T {
  try {
    return read()
  } catch (error) {
    if (error instanceof IdentifierError || error instanceof WhereError)
      throw new ShapeDefinitionError(field, error.message)
    throw error
  }
}

const columnNames = (columns: readonly string[] | null | undefined) => (columns ? columns.map(parseColumnName) : null)

/**
 * Reads a definition whose table and columns are written as a person or a client writes them (any identifier
 * spelling); its where as text, or already parsed.
 */
export function canonicaliseShape(definition: {
  table: string
  columns?: readonly string[] | null
  where?: string | WhereTree | null
  params?: Readonly<Record<string, string>>
  replica?: 'default' | 'full'
  queryableColumns?: readonly string[] | null
}): CanonicalShape {
  const { schema, name } = readField('table', () => parseTableName(definition.table))
  const given = definition.where
  const where = readField('where', () => {
    const tree = typeof given === 'string' && given !== '' ? parseWhere(given) : given || null
    return tree && { canonical: tree.canonical, placeholders: tree.placeholders }
  })
  return {
    schema,
    name,
    columns: canonicalColumns(
      'columns',
      readField('columns', () => columnNames(definition.columns))
    ),
    where: where?.canonical ?? null,
    params: canonicalParams(definition.params ?? {}, where?.placeholders ?? new Set()),
    replica: definition.replica ?? 'default',
    queryableColumns: canonicalColumns(
      'queryable_columns',
      readField('queryable_columns', () => columnNames(definition.queryableColumns))
    )
  }
}

export const shapeKey = (shape: CanonicalShape): string => JSON.stringify(shape)

/** The claim a shape token carries: canonical, with identifiers written so that `canonicaliseShape` reads them back. */
export function shapeClaim(shape: CanonicalShape): PinnedShape {
  return {
    table: `${identifierText(shape.schema)}.${identifierText(shape.name)}`,
    columns: shape.columns?.map(identifierText) ?? null,
    where: shape.where,
    params: shape.params,
    replica: shape.replica,
    queryable_columns: shape.queryableColumns?.map(identifierText) ?? null
  }
}

export function shapeFromClaim(claim: PinnedShape): CanonicalShape {
  return canonicaliseShape({ ...claim, queryableColumns: claim.queryable_columns })
}

/** Which parts of two shapes differ, for a 403 that says why. */
export function shapeDifferences(expected: CanonicalShape, actual: CanonicalShape): string[] {
  const fields: Array<[string, unknown, unknown]> = [
    ['table', [expected.schema, expected.name], [actual.schema, actual.name]],
    ['columns', expected.columns, actual.columns],
    ['where', expected.where, actual.where],
    ['params', expected.params, actual.params],
    ['replica', expected.replica, actual.replica]
  ]
  return fields.filter(([, a, b]) => JSON.stringify(a) !== JSON.stringify(b)).map(([field]) => field)
}

/** The shape-defining query parameters of the upstream request, set by the proxy. */
export function upstreamShapeParams(shape: CanonicalShape): Array<[string, string]> {
  const quoteAll = (columns: string[]) => columns.map((column) => `"${column.replaceAll('"', '""')}"`).join(',')
  const entries: Array<[string, string]> = [
    ['table', `"${shape.schema.replaceAll('"', '""')}"."${shape.name.replaceAll('"', '""')}"`]
  ]
  if (shape.columns) entries.push(['columns', quoteAll(shape.columns)])
  if (shape.queryableColumns) entries.push(['queryable_columns', quoteAll(shape.queryableColumns)])
  if (shape.where) entries.push(['where', shape.where])
  for (const [key, value] of Object.entries(shape.params)) entries.push([`params[${key}]`, value])
  if (shape.replica !== 'default') entries.push(['replica', shape.replica])
  return entries
}
