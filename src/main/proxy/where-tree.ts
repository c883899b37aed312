import type { Node } from 'libpg-query'
import { MAX_WHERE_LENGTH, WHERE_PREFIX, WhereError, bareWhereClause, deparseExpression, parseSelect } from '../sql'

/** A where clause read by the Postgres parser: its tree and the one canonical text the tree deparses to. */
export interface WhereTree {
  node: Node
  /** Equal for wheres that differ only in spacing, keyword or unquoted-identifier case and redundant parentheses. */
  canonical: string
  /** The `$n` placeholders it uses. */
  placeholders: Set<number>
}

/**
 * The tree (changed in place, e.g. a row filter put into a subquery) with its canonical text, rebuilt when first read
 * (a deparse and a reparse: a where joined to a row filter is rebuilt once, as the whole). Reading it throws WhereError
 * when the tree cannot be rebuilt.
 */
export function rebuildWhere(node: Node): WhereTree {
  let canonical: string | undefined
  return {
    node,
    placeholders: placeholdersOf(node),
    get canonical(): string {
      canonical ??= canonicalText(node)
      return canonical
    }
  }
}

function canonicalText(node: Node): string {
  const canonical = deparseExpression(node)
  if (canonical === undefined)
    throw new WhereError('where could not be rebuilt as equivalent SQL; add parentheses around its operands', 'where')
  // a where the proxy built (a row filter joined to it) must still read back wherever it is sent
  if (canonical.length > MAX_WHERE_LENGTH)
    throw new WhereError(
      `where is too long once the row filter is added: ${canonical.length.toLocaleString('en')} characters, at most ${MAX_WHERE_LENGTH.toLocaleString('en')} (MAX_WHERE_LENGTH)`,
      'where'
    )
  return canonical
}

/** Parses `text` as one boolean expression (no other SQL clauses); throws WhereError naming the problem. Call `await loadParser()` first. */
export function parseWhere(text: string): WhereTree {
  const whereClause = bareWhereClause(parseSelect(WHERE_PREFIX, text, 'where'))
  return rebuildWhere(whereClause)
}

function mapTree(value: unknown, visit: (node: Record<string, unknown>) => unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => mapTree(item, visit))
  if (value === null || typeof value !== 'object') return value
  const replaced = visit(value as Record<string, unknown>)
  if (replaced !== undefined) return replaced
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, mapTree(inner, visit)]))
}

/** The `$n` a tree uses, found without copying it. */
function placeholdersOf(node: Node): Set<number> {
  const found = new Set<number>()
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit)
    if (value === null || typeof value !== 'object') return
    const ref = (value as Record<string, unknown>).ParamRef as { number?: number } | undefined
    if (ref) found.add(ref.number ?? 0)
    else Object.values(value).forEach(visit)
  }
  visit(node)
  return found
}

/** The same condition with every `$n` renumbered to `$(n + shift)`. */
function shiftPlaceholders(node: Node, shift: number): Node {
  return mapTree(node, (candidate) => {
    const ref = candidate.ParamRef as { number?: number } | undefined
    return ref ? { ParamRef: { ...ref, number: (ref.number ?? 0) + shift } } : undefined
  }) as Node
}

/** The same condition with every `$n` replaced by the string literal `values[n]` (typed by context, as a parameter is). */
export function bindPlaceholders(node: Node, values: Readonly<Record<string, string>>): Node {
  return mapTree(node, (candidate) => {
    const ref = candidate.ParamRef as { number?: number } | undefined
    const value = ref ? values[String(ref.number ?? 0)] : undefined
    return value === undefined ? undefined : { A_Const: { sval: { sval: value } } }
  }) as Node
}

function conjuncts(node: Node): Node[] {
  if ('BoolExpr' in node && node.BoolExpr.boolop === 'AND_EXPR') return node.BoolExpr.args ?? []
  return [node]
}

/**
 * `(first) AND (second)` built on the parse trees, so no text of either can escape its operand, with the
 * placeholders of `second` moved after the `firstParamCount` values of `first`.
 */
export function conjoin(first: WhereTree, second: WhereTree, firstParamCount: number): WhereTree {
  const shifted =
    firstParamCount > 0 && second.placeholders.size > 0 ? shiftPlaceholders(second.node, firstParamCount) : second.node
  const args = [...conjuncts(first.node), ...conjuncts(shifted)]
  return rebuildWhere({ BoolExpr: { boolop: 'AND_EXPR', args } })
}
