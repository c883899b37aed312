import { hasSqlDetails, type Node } from 'libpg-query'
import { WHERE_PREFIX, deparseExpression, parse } from './ast'
import { type ColumnTypes } from './column-types'
import { type CompileContext } from './compile/typed'
import { conditionProbes } from './compile/logic'
import { compileCondition } from './compile/walk'
import { WhereError, WhereRuntimeError } from './errors'
import { type Alternatives } from './probes'
import { type Row, RowValues } from './row-values'

export interface CompiledWhere {
  /** Safe SQL rebuilt from the validated tree, parenthesised, with params inlined as typed literals. */
  sql: string
  /** True when Postgres would keep the row; values are Postgres text output. Rows on which Postgres would raise an error (division by zero, overflow) do not match. */
  matches(row: Row): boolean
  /** matches() of a row whose values are read once for every where it is matched against. */
  matchesValues(row: RowValues): boolean
  referencedColumns: string[]
  /** What an index can check of every row the where matches (see probes.ts); null when nothing can be checked. */
  probes: Alternatives | null
  /** Normalised text for shape identity: equal for wheres that differ only in spacing, case of keywords, redundant parentheses or how a param is given. */
  canonical: string
}

export interface CompileWhereInput {
  where: string
  params: Readonly<Record<string, string>>
  columns: ColumnTypes
  /** When set, only these columns may appear (queryable_columns). */
  allowedColumns?: readonly string[]
}

/**
 * Compiling costs about 1.2 µs of CPU per character (parse, type check, deparse, and the reparse that proves the SQL
 * means the tree): 16,384 characters stay within 50 ms of event loop (bench/adversarial-inputs.ts). A GET URL holds
 * no more anyway (Node's 16 KiB header limit); a longer where is refused naming the cap.
 */
export const MAX_WHERE_LENGTH = 16_384

/** Parses `prefix + text` and returns its single SELECT, mapping parser errors to positions in `text`. */
export function parseSelect(
  prefix: string,
  text: string,
  param: WhereError['param']
): Extract<Node, { SelectStmt: unknown }>['SelectStmt'] {
  if (text.length > MAX_WHERE_LENGTH)
    throw new WhereError(
      `${param} is too long: ${text.length.toLocaleString('en')} characters, at most ${MAX_WHERE_LENGTH.toLocaleString('en')} (MAX_WHERE_LENGTH)`,
      param
    )
  if (text.includes('\u0000')) throw new WhereError(`${param} must not contain a NUL character`, param)
  const sql = prefix + text
  let stmts
  try {
    stmts = parse(sql).stmts ?? []
  } catch (error) {
    // the WebAssembly parser runs out of stack on expressions nested some thousands deep
    if (error instanceof RangeError) throw new WhereError(`${param} is nested too deeply to parse`, param)
    if (!hasSqlDetails(error) || !error.sqlDetails) throw error
    const position = Math.max(1, Math.min(text.length + 1, error.sqlDetails.cursorPosition - prefix.length + 1))
    throw new WhereError(error.sqlDetails.message, param, position, true)
  }
  const [first] = stmts
  const length = first?.stmt_len ?? 0
  if (stmts.length !== 1 || (length > 0 && length < sql.length)) {
    const position = length > 0 ? length - prefix.length + 1 : undefined
    throw new WhereError(
      `${param} must be a single ${param === 'where' ? 'expression' : 'clause'}: ";" would end the statement`,
      param,
      position
    )
  }
  const statement = first?.stmt
  if (!statement || !('SelectStmt' in statement)) throw new WhereError(`${param} is malformed`, param)
  return statement.SelectStmt
}

/** The where of a parsed `SELECT … WHERE <where>`, which must be the only clause the person wrote. */
export function bareWhereClause(select: ReturnType<typeof parseSelect>): Node {
  const { whereClause, targetList, fromClause, op, ...rest } = select
  const extra = Object.entries(rest).filter(
    ([key, value]) => key !== 'limitOption' && value !== undefined && value !== false
  )
  if (!whereClause || extra.length > 0 || op !== 'SETOP_NONE' || targetList?.length !== 1 || fromClause?.length !== 1) {
    throw new WhereError(
      'where must be a boolean expression only: it may not contain other SQL clauses (ORDER BY, LIMIT, GROUP BY, UNION…)',
      'where'
    )
  }
  return whereClause
}

/** Validates a where clause and compiles it into safe SQL and an in-process evaluator (call `await loadParser()` once first). */
export function compileWhere(input: CompileWhereInput): CompiledWhere {
  for (const key of Object.keys(input.params)) {
    if (!/^[1-9]\d*$/.test(key))
      throw new WhereError(`params keys must be placeholder numbers 1, 2, …; got "${key}"`, 'params')
  }
  const whereClause = bareWhereClause(parseSelect(WHERE_PREFIX, input.where, 'where'))
  const ctx: CompileContext = {
    columns: input.columns,
    allowed: input.allowedColumns ? new Set(input.allowedColumns) : undefined,
    params: input.params,
    usedParams: new Set(),
    referenced: new Set(),
    offset: WHERE_PREFIX.length,
    depth: 0
  }
  const root = compileCondition(ctx, whereClause)
  for (const key of Object.keys(input.params)) {
    if (!ctx.usedParams.has(Number(key)))
      throw new WhereError(`params[${key}] is not used: where has no $${key}`, 'params')
  }
  const canonical = deparseExpression(root.ast)
  if (canonical === undefined) {
    throw new WhereError(
      'where could not be rebuilt as equivalent SQL; add parentheses around the operands of IS and comparison operators',
      'where'
    )
  }
  const evaluate = root.evaluate
  return {
    sql: `(${canonical})`,
    matches(row) {
      return this.matchesValues(new RowValues(row))
    },
    matchesValues(row) {
      try {
        return evaluate(row) === true
      } catch (error) {
        if (error instanceof WhereRuntimeError) return false
        throw error
      }
    },
    referencedColumns: [...ctx.referenced].sort(),
    probes: conditionProbes(root) ?? null,
    canonical
  }
}
