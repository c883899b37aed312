import { createHash } from 'node:crypto'
import { type CompiledWhere, IdentifierError, WhereError, compileWhere, parseTableName } from '../../sql'
import type { FilterCompiler, SubqueryPlan } from './filter'
import type { ShapeInput } from '../../../shared/shape-input'
import { TableNotFoundError, type TableInfo } from './table-info'

/** What a request says about its shape (defined in src/shared, where time travel names shapes by it too). */
export { ShapeInputSchema, type ShapeInput } from '../../../shared/shape-input'

/** A shape request resolved against the catalog: the table, its selected columns, the compiled where, the identity. */
export interface ResolvedShape {
  input: ShapeInput
  table: TableInfo
  /** Selected columns in table order. */
  columns: string[]
  /** `queryable_columns`: what subset where/order_by may reference; null when not restricted. */
  queryable: string[] | null
  where: CompiledWhere | null
  /** Set (and `where` null) when the where holds `IN (SELECT …)`: see src/main/shapes/subquery. */
  subquery?: SubqueryPlan | null
  replica: ShapeInput['replica']
  log: ShapeInput['log']
  /** Equal for requests that mean the same shape, whatever their spelling, spacing or column order. */
  identity: string
}

/** Field → messages, as in `{"message":"Invalid request","errors":{…}}`. */
export class InvalidRequestError extends Error {
  override readonly name = 'InvalidRequestError'
  constructor(readonly errors: Record<string, unknown>) {
    super(
      Object.entries(errors)
        .map(([field, messages]) => `${field}: ${JSON.stringify(messages)}`)
        .join('; ')
    )
  }
}

export const invalid = (field: string, message: string): InvalidRequestError =>
  new InvalidRequestError({ [field]: [message] })

/** Splits on commas outside double quotes; quoted names keep their case, unquoted ones are lower-cased. */
export function parseColumnList(text: string): string[] {
  const names: string[] = []
  let index = 0
  while (index <= text.length) {
    let name = ''
    if (text[index] === '"') {
      index += 1
      for (;;) {
        const quote = text.indexOf('"', index)
        if (quote === -1) throw new IdentifierError(`Invalid identifier with unterminated quote: ${text}`)
        name += text.slice(index, quote)
        index = quote + 1
        if (text[index] !== '"') break
        name += '"'
        index += 1
      }
      if (index < text.length && text[index] !== ',')
        throw new IdentifierError(`Invalid identifier with unescaped quote: ${text}`)
      if (name === '') throw new IdentifierError('Invalid zero-length delimited identifier')
    } else {
      const comma = text.indexOf(',', index)
      const raw = text.slice(index, comma === -1 ? undefined : comma).trim()
      if (raw === '') throw new IdentifierError('Invalid zero-length delimited identifier')
      if (raw.includes('"')) throw new IdentifierError(`Invalid identifier with unescaped quote: ${raw}`)
      if (!/^[\p{L}_][\p{L}\p{M}_0-9$]*$/u.test(raw))
        throw new IdentifierError(`Invalid unquoted identifier contains special characters: ${raw}`)
      name = raw.replace(/[A-Z]/g, (c) => c.toLowerCase())
      index = comma === -1 ? text.length : comma
    }
    names.push(name)
    if (index >= text.length) break
    index += 1
    if (index === text.length) throw new IdentifierError('Invalid zero-length delimited identifier')
  }
  return names
}

export function parseTable(table: string): { schema: string; name: string } {
  if (table === '') throw invalid('table', "can't be blank")
  try {
    return parseTableName(table)
  } catch (error) {
    if (error instanceof IdentifierError) throw invalid('table', error.message)
    throw error
  }
}

function columnList(field: string, text: string): string[] {
  try {
    return parseColumnList(text)
  } catch (error) {
    if (error instanceof IdentifierError) throw invalid(field, error.message)
    throw error
  }
}

function queryableColumns(input: ShapeInput, table: TableInfo): string[] | null {
  if (input.queryableColumns === null) return null
  const listed = columnList('queryable_columns', input.queryableColumns)
  const known = new Set(table.columns.map((column) => column.name))
  const unknown = listed.filter((name) => !known.has(name))
  if (unknown.length > 0)
    throw invalid(
      'queryable_columns',
      `The following queryable columns are not found on the table: ${unknown.join(', ')}`
    )
  const missingKey = table.hasPrimaryKey ? table.keyColumns.filter((name) => !listed.includes(name)) : []
  if (missingKey.length > 0)
    throw invalid(
      'queryable_columns',
      `The list of queryable columns must include all primary key columns, missing: ${missingKey.join(', ')}`
    )
  return table.columns.map((column) => column.name).filter((name) => listed.includes(name))
}

function selectColumns(input: ShapeInput, table: TableInfo, queryable: string[] | null): string[] {
  if (input.columns === null && queryable) return queryable
  if (input.columns === null) {
    const generated = table.columns.filter((column) => column.generated).map((column) => column.name)
    if (generated.length > 0) {
      throw invalid(
        'columns',
        `The following columns are generated and cannot be included in the shape: ${generated.join(', ')}. You can exclude them from the shape by explicitly listing which columns to fetch in the 'columns' query param`
      )
    }
    return table.columns.map((column) => column.name)
  }
  const requested = columnList('columns', input.columns)
  const known = new Set(queryable ?? table.columns.map((column) => column.name))
  const unknown = requested.filter((name) => !known.has(name))
  if (unknown.length > 0)
    throw invalid('columns', `The following columns are not found on the table: ${unknown.join(', ')}`)
  const missingKey = table.hasPrimaryKey ? table.keyColumns.filter((name) => !requested.includes(name)) : []
  if (missingKey.length > 0)
    throw invalid(
      'columns',
      `The list of columns must include all primary key columns, missing: ${missingKey.join(', ')}`
    )
  const generated = table.columns
    .filter((column) => column.generated && requested.includes(column.name))
    .map((column) => column.name)
  if (generated.length > 0)
    throw invalid(
      'columns',
      `The following columns are generated and cannot be included in the shape: ${generated.join(', ')}`
    )
  return table.columns.map((column) => column.name).filter((name) => requested.includes(name))
}

function checkParams(input: ShapeInput): void {
  const keys = Object.keys(input.params)
  if (keys.some((key) => !/^\d+$/.test(key))) throw invalid('params', 'Parameters can only use numbers as keys')
  const numbers = keys.map(Number).sort((a, b) => a - b)
  if (numbers.some((number, index) => number !== index + 1))
    throw invalid('params', 'Parameters must be numbered sequentially, starting from 1')
}

async function compile(
  input: ShapeInput,
  table: TableInfo,
  lookup: (schema: string, name: string) => Promise<TableInfo>,
  compileFilter: FilterCompiler | null
): Promise<Pick<ResolvedShape, 'where' | 'subquery'>> {
  if (input.where === null) return { where: null, subquery: null }
  checkParams(input)
  try {
    const subquery = await compileFilter?.({
      where: input.where,
      params: input.params,
      table,
      allowed: null,
      lookup
    })
    if (subquery) return { where: null, subquery }
    return {
      where: compileWhere({ where: input.where, params: input.params, columns: table.columnTypes }),
      subquery: null
    }
  } catch (error) {
    if (!(error instanceof WhereError)) throw error
    // Like the reference, every error found while compiling the where (a param's value included) is the where's.
    throw new InvalidRequestError({ where: [whereErrorMessage(error)] })
  }
}

/** The reference wraps a where as `SELECT 1 WHERE <where>`: its syntax errors count positions from there. */
const REFERENCE_WRAPPER_LENGTH = 'SELECT 1 WHERE '.length

/**
 * `At location N: message`, N 0-based as the reference counts it: in the wrapped statement for syntax errors, in the
 * where text for every other error (clients such as the workbench rely on this).
 */
export function whereErrorMessage(error: WhereError): string {
  if (error.position === undefined) return error.message
  const location = error.position - 1 + (error.fromParser ? REFERENCE_WRAPPER_LENGTH : 0)
  return `At location ${location}: ${error.message}`
}

/** Postgres's own schemas, whose tables no publication can hold. */
const isSystemSchema = (schema: string): boolean =>
  /^(pg_catalog|information_schema|pg_toast|pg_temp_\d+|pg_toast_temp_\d+)$/.test(schema)

/**
 * Builds the shape a request asks for, with every rule of the reference (messages as the reference words them);
 * `compileFilter` takes the wheres with subqueries (without it they are refused as the plain compiler refuses them).
 */
export async function resolveDefinition(
  input: ShapeInput,
  lookup: (schema: string, name: string) => Promise<TableInfo>,
  compileFilter: FilterCompiler | null = null
): Promise<ResolvedShape> {
  const { schema, name } = parseTable(input.table)
  if (isSystemSchema(schema)) {
    throw invalid(
      'table',
      `Table "${schema}"."${name}" is a system catalog: shapes are made of user tables, which logical replication can follow`
    )
  }
  let table: TableInfo
  try {
    table = await lookup(schema, name)
  } catch (error) {
    if (error instanceof TableNotFoundError) throw invalid('table', error.message)
    throw error
  }
  const queryable = queryableColumns(input, table)
  const columns = selectColumns(input, table, queryable)
  const { where, subquery } = await compile(input, table, lookup, compileFilter)
  const explicit = input.columns === null ? null : [...columns].sort()
  const identity = JSON.stringify([
    table.schema,
    table.name,
    explicit,
    queryable,
    where?.canonical ?? subquery?.canonical ?? null,
    input.replica,
    input.log
  ])
  return { input, table, columns, queryable, where, subquery, replica: input.replica, log: input.log, identity }
}

/** The hash part of a handle: stable for a definition. */
export const identityHash = (identity: string): string =>
  BigInt(`0x${createHash('sha256').update(identity).digest('hex').slice(0, 12)}`).toString()

/** Every table a definition reads: its own and its subqueries' (a change to any of them may concern the shape). */
export function definitionTables(definition: ResolvedShape): TableInfo[] {
  return [definition.table, ...(definition.subquery?.dependencies.map((dependency) => dependency.table) ?? [])]
}
