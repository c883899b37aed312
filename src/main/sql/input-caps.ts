import { WhereError, type WhereParam } from './errors'

/**
 * Caps on what a caller's where hands the evaluator (the where itself is capped at MAX_WHERE_LENGTH). Every parser
 * and matcher is linear, so these keep one request, and each change routed through a shape, within a bounded cost
 * (bench/adversarial-inputs.ts).
 */

/** How long the `$n` parameters of one where may be, together, in characters. */
export const MAX_PARAMS_LENGTH = 65_536

/** The longest LIKE / ILIKE pattern, in characters: matching a segment with `_` costs ⌈its length / 32⌉ per character. */
export const MAX_LIKE_PATTERN_LENGTH = 1_024

/** A where or parameter over one of the caps: a 400 naming the cap. */
export class InputCapError extends WhereError {
  constructor(
    message: string,
    param: WhereParam,
    readonly cap: 'MAX_PARAMS_LENGTH' | 'MAX_LIKE_PATTERN_LENGTH',
    position?: number
  ) {
    super(message, param, position)
  }
}

const number = (value: number) => value.toLocaleString('en')

/** Refuses parameters longer than MAX_PARAMS_LENGTH together, naming the longest. */
export function checkParamsLength(params: Readonly<Record<string, string>>): void {
  let total = 0
  let longest: [string, string] = ['', '']
  for (const [key, value] of Object.entries(params)) {
    total += value.length
    if (value.length >= longest[1].length) longest = [key, value]
  }
  if (total <= MAX_PARAMS_LENGTH) return
  const [key, value] = longest
  const numbered = /^[1-9]\d*$/.test(key)
  throw new InputCapError(
    `the parameters are ${number(total)} characters long (params[${key}]: ${number(value.length)}); together they may hold at most ${number(MAX_PARAMS_LENGTH)} (MAX_PARAMS_LENGTH)`,
    numbered ? `params[${Number(key)}]` : 'params',
    'MAX_PARAMS_LENGTH'
  )
}

type Tree = Record<string, unknown>

/** Every object and array of a parse tree, parents before children, walked without recursion (the parser accepts nesting deeper than a JS stack). */
function preorder(root: unknown): Tree[] {
  const order: Tree[] = []
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const value = stack.pop()
    if (value === null || typeof value !== 'object') continue
    order.push(value as Tree)
    for (const child of Object.values(value)) stack.push(child)
  }
  return order
}

const paramNumber = (node: Tree): number | undefined => (node.ParamRef as { number?: number } | undefined)?.number

/** How long the text of each subtree can be: its string constants and parameters, all concatenated. */
function textLengths(order: readonly Tree[], params: Readonly<Record<string, string>>): Map<Tree, number> {
  const lengths = new Map<Tree, number>()
  for (let i = order.length - 1; i >= 0; i--) {
    const node = order[i] as Tree
    const param = paramNumber(node)
    let length =
      ((node.A_Const as { sval?: { sval?: string } } | undefined)?.sval?.sval?.length ?? 0) +
      (param === undefined ? 0 : (params[String(param)]?.length ?? 0))
    for (const child of Object.values(node))
      if (child !== null && typeof child === 'object') length += lengths.get(child as Tree) ?? 0
    lengths.set(node, length)
  }
  return lengths
}

/**
 * Refuses a where (its parse tree, `offset` characters of wrapping before the caller's text) whose parameters or
 * LIKE patterns are over the caps, before anything reads them. A pattern is measured by the constants and parameters
 * it is built of.
 */
export function checkInputCaps(tree: unknown, params: Readonly<Record<string, string>>, offset = 0): void {
  const order = preorder(tree)
  const used: Record<string, string> = {}
  for (const node of order) {
    const param = paramNumber(node)
    const value = param === undefined ? undefined : params[String(param)]
    if (value !== undefined) used[String(param)] = value
  }
  checkParamsLength(used)
  const likes = order.flatMap((node) => {
    const expr = node.A_Expr as { kind?: string; rexpr?: Tree; location?: number } | undefined
    return (expr?.kind === 'AEXPR_LIKE' || expr?.kind === 'AEXPR_ILIKE') && expr.rexpr ? [expr] : []
  })
  if (likes.length === 0) return
  const lengths = textLengths(order, params)
  for (const expr of likes) {
    const length = lengths.get(expr.rexpr as Tree) ?? 0
    if (length <= MAX_LIKE_PATTERN_LENGTH) continue
    const position = expr.location !== undefined && expr.location >= offset ? expr.location - offset + 1 : undefined
    throw new InputCapError(
      `a LIKE pattern is up to ${number(length)} characters long; a pattern may hold at most ${number(MAX_LIKE_PATTERN_LENGTH)} (MAX_LIKE_PATTERN_LENGTH)`,
      'where',
      'MAX_LIKE_PATTERN_LENGTH',
      position
    )
  }
}
