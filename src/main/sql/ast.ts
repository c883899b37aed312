import { loadModule, parseSync, type Node, type ParseResult, type SelectStmt } from 'libpg-query'
import { deparseSync } from 'pgsql-deparser'
import { type SqlType, typeName } from './types'

/** Builders for the Postgres parse-tree nodes of generated SQL, in the shape libpg-query itself produces. */

export function str(sval: string): Node {
  return { String: { sval } }
}

export function columnRef(name: string): Node {
  return { ColumnRef: { fields: [str(name)] } }
}

export function stringConst(value: string): Node {
  return { A_Const: { sval: { sval: value } } }
}

export function nullConst(): Node {
  return { A_Const: { isnull: true } }
}

export function boolConst(value: boolean): Node {
  return { A_Const: { boolval: value ? { boolval: true } : {} } }
}

/** Types spelled with SQL keywords (integer, boolean…) parse as pg_catalog-qualified names; the others do not. */
const PLAIN_TYPE_NAMES = new Set(['text', 'uuid', 'date'])

function typeNameNode(type: SqlType): Node {
  const base = typeName(type.kind === 'array' ? type.element : type)
  const name = { names: PLAIN_TYPE_NAMES.has(base) ? [str(base)] : [str('pg_catalog'), str(base)], typemod: -1 }
  return { TypeName: type.kind === 'array' ? { ...name, arrayBounds: [{ Integer: { ival: -1 } }] } : name }
}

export function cast(arg: Node, type: SqlType): Node {
  const target = typeNameNode(type)
  if (!('TypeName' in target)) throw new Error('typeNameNode builds a TypeName')
  return { TypeCast: { arg, typeName: target.TypeName } }
}

export function op(name: string, lexpr: Node | undefined, rexpr: Node): Node {
  return { A_Expr: { kind: 'AEXPR_OP', name: [str(name)], ...(lexpr ? { lexpr } : {}), rexpr } }
}

export function collateC(arg: Node): Node {
  return { CollateClause: { arg, collname: [str('C')] } }
}

export function funcCall(name: string, args: Node[]): Node {
  return { FuncCall: { funcname: [str(name)], args, funcformat: 'COERCE_EXPLICIT_CALL' } }
}

const POSITION_KEYS = new Set(['location', 'rexpr_list_start', 'rexpr_list_end', 'list_start', 'list_end'])

export function withoutPositions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPositions)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !POSITION_KEYS.has(key))
      .map(([key, inner]) => [key, withoutPositions(inner)])
  )
}

/**
 * Whether two trees are equal but for source positions and the order of keys (a tree changed in code, such as a row
 * filter put into a subquery, against its reparse), compared in place: no copy of either is made.
 */
function sameTreeIgnoringPositions(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false
  const isArray = Array.isArray(a)
  if (isArray !== Array.isArray(b)) return false
  if (isArray) {
    const left = a as unknown[]
    const right = b as unknown[]
    if (left.length !== right.length) return false
    for (let i = 0; i < left.length; i++) if (!sameTreeIgnoringPositions(left[i], right[i])) return false
    return true
  }
  const left = a as Record<string, unknown>
  const right = b as Record<string, unknown>
  let keys = 0
  for (const key in left) {
    if (POSITION_KEYS.has(key) || left[key] === undefined) continue
    keys++
    if (!sameTreeIgnoringPositions(left[key], right[key])) return false
  }
  for (const key in right) if (!POSITION_KEYS.has(key) && right[key] !== undefined) keys--
  return keys === 0
}

let parserLoading: Promise<void> | undefined
let parserReady = false

/** Loads the WebAssembly parser once; compileWhere and compileOrderBy are synchronous afterwards. */
export function loadParser(): Promise<void> {
  parserLoading ??= loadModule().then(() => {
    parserReady = true
  })
  return parserLoading
}

export function parse(sql: string): ParseResult {
  if (!parserReady) throw new Error('the SQL parser is not loaded: await loadParser() once before compiling')
  return parseSync(sql)
}

export const WHERE_PREFIX = 'SELECT 1 FROM t WHERE '

/**
 * Deparses a generated expression and proves the text means the tree: it must parse back to the same
 * tree, so no deparser quirk (precedence, quoting) can change what Postgres runs. Undefined when it does not.
 */
export function deparseExpression(node: Node): string | undefined {
  const sql = deparseSync(node, { pretty: false })
  return sameTree(WHERE_PREFIX + sql, (stmt) => stmt.whereClause, node) ? sql : undefined
}

function sameTree(sql: string, pick: (select: SelectStmt) => unknown, expected: unknown): boolean {
  try {
    const reparsed = parseSync(sql).stmts ?? []
    const stmt = reparsed[0]?.stmt
    if (reparsed.length !== 1 || !stmt || !('SelectStmt' in stmt)) return false
    return sameTreeIgnoringPositions(pick(stmt.SelectStmt), expected)
  } catch {
    return false
  }
}

/** Same check for an ORDER BY list. */
export function deparseSortClause(items: Node[]): string | undefined {
  const sql = items.map((item) => deparseSync(item, { pretty: false })).join(', ')
  return sameTree(`SELECT 1 FROM t ORDER BY ${sql}`, (stmt) => stmt.sortClause, items) ? sql : undefined
}
