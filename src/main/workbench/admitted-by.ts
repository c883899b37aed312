import type { Node } from 'libpg-query'
import type pg from 'pg'
import { deparseSync } from 'pgsql-deparser'
import type { SubqueryAdmission } from '../../shared/contract/shapes-workbench'
import { loadParser, parse } from '../sql'

/** Inner rows listed per subquery; one more is read to tell that there are more. */
export const INNER_ROWS_SHOWN = 20
const STATEMENT_TIMEOUT_MS = 5_000

export class AdmittedByError extends Error {}

interface SubqueryTest {
  sublink: Node
  negated: boolean
}

type Row = Record<string, string | null>

const oneLine = (sql: string) => sql.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')').trim()
const deparse = (node: Node) => oneLine(deparseSync(node as Parameters<typeof deparseSync>[0]))

/** The `IN (SELECT …)` tests of a where, through AND / OR / NOT only (nested ones belong to their subquery's where). */
function subqueryTests(node: Node | undefined, negated = false): SubqueryTest[] {
  if (!node) return []
  if ('BoolExpr' in node) {
    const { boolop, args = [] } = node.BoolExpr
    return args.flatMap((arg) => subqueryTests(arg, boolop === 'NOT_EXPR' ? !negated : negated))
  }
  if ('SubLink' in node && node.SubLink.subLinkType === 'ANY_SUBLINK' && !node.SubLink.operName?.length)
    return [{ sublink: node, negated }]
  return []
}

const columnName = (node: Node): string => {
  if (!('ColumnRef' in node))
    throw new AdmittedByError(`the left side of IN (SELECT …) must be columns, not ${deparse(node)}`)
  const last = node.ColumnRef.fields?.at(-1)
  if (!last || !('String' in last))
    throw new AdmittedByError(`the left side of IN (SELECT …) must be columns, not ${deparse(node)}`)
  return last.String.sval ?? ''
}

/** Every `$n` of a tree replaced by its value as a string literal (Postgres types it from where it is used). */
function inlineParams(node: unknown, params: readonly string[]): unknown {
  if (Array.isArray(node)) return node.map((item) => inlineParams(item, params))
  if (node === null || typeof node !== 'object') return node
  if ('ParamRef' in node) {
    const number = (node as { ParamRef: { number?: number } }).ParamRef.number ?? 0
    const value = params[number - 1]
    if (value === undefined) throw new AdmittedByError(`the where uses $${number} but has ${params.length} param(s)`)
    return { A_Const: { sval: { sval: value } } }
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, inlineParams(value, params)]))
}

const stringConst = (value: string): Node => ({ A_Const: { sval: { sval: value } } })
const textOf = (expression: Node): Node => ({
  TypeCast: { arg: expression, typeName: { names: [{ String: { sval: 'text' } }], typemod: -1 } }
})
const equals = (left: Node, right: Node): Node => ({
  A_Expr: { kind: 'AEXPR_OP', name: [{ String: { sval: '=' } }], lexpr: left, rexpr: right }
})

/** `SELECT * FROM <inner> WHERE <inner where> AND <selected>::text = '<value>' … LIMIT n`; null when a value is NULL (IN never matches it). */
function innerRowsQuery(
  select: Record<string, unknown>,
  values: Array<string | null>,
  params: readonly string[]
): string | null {
  if (values.some((value) => value === null)) return null
  const targets = (select.targetList as Array<{ ResTarget: { val: Node } }> | undefined) ?? []
  if (targets.length !== values.length)
    throw new AdmittedByError(`the subquery selects ${targets.length} column(s) for ${values.length} on the left`)
  const conditions = targets.map((target, index) =>
    equals(textOf(target.ResTarget.val), stringConst(values[index] as string))
  )
  if (select.whereClause) conditions.unshift(select.whereClause as Node)
  const whereClause = conditions.length === 1 ? conditions[0] : { BoolExpr: { boolop: 'AND_EXPR', args: conditions } }
  const statement = {
    SelectStmt: {
      targetList: [{ ResTarget: { val: { ColumnRef: { fields: [{ A_Star: {} }] } } } }],
      fromClause: select.fromClause,
      whereClause,
      limitCount: { A_Const: { ival: { ival: INNER_ROWS_SHOWN + 1 } } },
      limitOption: 'LIMIT_OPTION_COUNT',
      op: 'SETOP_NONE'
    }
  }
  return deparseSync(inlineParams(statement, params) as Parameters<typeof deparseSync>[0])
}

/**
 * For each `IN (SELECT …)` test of a where: the inner rows that select the outer row's values, read in one read-only
 * transaction. Nested subqueries stay in their inner where, so Postgres evaluates them as the shape does.
 */
export async function admittedBy(
  pool: pg.Pool,
  input: { where: string; params: readonly string[]; row: Row }
): Promise<SubqueryAdmission[]> {
  await loadParser()
  let where: Node | undefined
  try {
    const statement = parse(`SELECT 1 WHERE ${input.where}`).stmts?.[0]?.stmt
    where = statement && 'SelectStmt' in statement ? statement.SelectStmt.whereClause : undefined
  } catch (error) {
    throw new AdmittedByError(`the where does not parse: ${(error as Error).message}`)
  }
  const tests = subqueryTests(where)
  if (tests.length === 0) return []
  const client = await pool.connect()
  try {
    await client.query(`BEGIN READ ONLY; SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`)
    const admissions: SubqueryAdmission[] = []
    for (const { sublink, negated } of tests) {
      if (!('SubLink' in sublink)) continue
      const { testexpr, subselect } = sublink.SubLink
      if (!testexpr || !subselect || !('SelectStmt' in subselect)) continue
      const select = subselect.SelectStmt as unknown as Record<string, unknown>
      const names = ('RowExpr' in testexpr ? (testexpr.RowExpr.args ?? []) : [testexpr]).map(columnName)
      const columns = names.map((name) => ({ name, value: input.row[name] ?? null, inShape: name in input.row }))
      const sql = innerRowsQuery(
        select,
        columns.map((column) => column.value),
        input.params
      )
      const rows = sql ? (await client.query<Row>(sql)).rows : []
      const from = (select.fromClause as Node[] | undefined)?.[0]
      admissions.push({
        test: deparse(negated ? { BoolExpr: { boolop: 'NOT_EXPR', args: [sublink] } } : sublink),
        negated,
        columns,
        innerTable: from ? deparse(from) : '',
        innerRows: rows.slice(0, INNER_ROWS_SHOWN),
        more: rows.length > INNER_ROWS_SHOWN
      })
    }
    return admissions
  } catch (error) {
    if (error instanceof AdmittedByError) throw error
    throw new AdmittedByError(`Postgres refused the inner query: ${(error as Error).message}`)
  } finally {
    await client.query('ROLLBACK').catch(() => undefined)
    client.release()
  }
}
