import { WhereRuntimeError } from './errors'
import { isSpace, skipSpaces, trimSpaces } from './text-scan'

const BACKSLASH = 92
const QUOTE = 34

/** A quoted element from the quote at `start`: its text (backslash escapes undone) and the closing quote's index, or null. */
function quotedElement(text: string, start: number): { value: string; end: number } | null {
  let value = ''
  let from = start + 1
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === QUOTE) return { value: value + text.slice(from, i), end: i }
    if (code === BACKSLASH) {
      value += text.slice(from, i)
      from = ++i
    }
  }
  return null
}

/** An unquoted element from `start` up to a delimiter (`,{}"`, unless escaped): its text unescaped, and where it ends. */
function unquotedElement(text: string, start: number): { value: string; end: number } {
  let value = ''
  let from = start
  let i = start
  for (; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 44 || code === 123 || code === 125 || code === QUOTE) break
    if (code === BACKSLASH) {
      value += text.slice(from, i)
      from = ++i
    }
  }
  return { value: value + text.slice(from, Math.min(i, text.length)), end: i }
}

/**
 * Reads a Postgres array literal (`{1,2}`, `{{a,b},{"c d",NULL}}`, `[0:1]={x,y}`) into its elements,
 * flattened in storage order: the operators the evaluator supports (@>, <@, &&, ANY/ALL) ignore dimensions.
 */
export function parseArray(text: string): (string | null)[] {
  const malformed = (): WhereRuntimeError => new WhereRuntimeError(`malformed array literal: "${text}"`)
  let index = skipSpaces(text, 0)
  if (index === text.length) throw malformed()
  if (text[index] === '[') {
    const equals = text.indexOf('=', index)
    // unambiguous: brackets delimit each pair of bounds
    if (equals === -1 || !/^(\[-?\d+:-?\d+\])+[ \t\n\v\f\r]*$/.test(text.slice(index, equals))) throw malformed()
    index = skipSpaces(text, equals + 1)
  }
  const items: (string | null)[] = []
  let depth = 0
  let expectItem = true
  let afterComma = false
  for (; index < text.length; index++) {
    const char = text[index]!
    if (isSpace(text.charCodeAt(index))) continue
    if (char === '{') {
      if (!expectItem) throw malformed()
      depth += 1
      afterComma = false
      continue
    }
    if (depth === 0) throw malformed()
    if (char === '}') {
      if (afterComma) throw malformed()
      depth -= 1
      expectItem = false
      if (depth === 0) break
      continue
    }
    if (char === ',') {
      if (expectItem) throw malformed()
      expectItem = true
      afterComma = true
      continue
    }
    if (!expectItem) throw malformed()
    afterComma = false
    if (char === '"') {
      const quoted = quotedElement(text, index)
      if (!quoted) throw malformed()
      items.push(quoted.value)
      index = quoted.end
    } else {
      const { value, end } = unquotedElement(text, index)
      index = end - 1
      const trimmed = trimSpaces(value)
      items.push(trimmed.toUpperCase() === 'NULL' ? null : trimmed)
    }
    expectItem = false
  }
  if (depth !== 0 || skipSpaces(text, index + 1) !== text.length) throw malformed()
  return items
}

/** A one-dimensional array literal with every element quoted. */
export function formatArray(items: readonly (string | null)[]): string {
  const quoted = items.map((item) =>
    item === null ? 'NULL' : `"${item.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
  )
  return `{${quoted.join(',')}}`
}

type ArrayTest = (a: unknown[], b: unknown[]) => boolean

/** Below this many element pairs a nested loop is quicker than a set of keys. */
const PAIRWISE_LIMIT = 256

/**
 * `@>`, `<@` and `&&` (a NULL element equals nothing): small arrays compared pair by pair, larger ones through a set
 * of keys (`key` equal exactly when `order` says equal), so the work stays linear in the two arrays.
 */
export function arrayContainment(
  operator: string,
  order: (a: unknown, b: unknown) => number,
  key: (item: unknown) => string
): ArrayTest | undefined {
  const finder = (haystack: unknown[], needles: number): ((needle: unknown) => boolean) => {
    if (haystack.length * needles <= PAIRWISE_LIMIT)
      return (needle) => needle !== null && haystack.some((item) => item !== null && order(item, needle) === 0)
    const keys = new Set<string>()
    for (const item of haystack) if (item !== null) keys.add(key(item))
    return (needle) => needle !== null && keys.has(key(needle))
  }
  const containsAll: ArrayTest = (haystack, needles) => needles.every(finder(haystack, needles.length))
  const tests: Record<string, ArrayTest> = {
    '@>': containsAll,
    '<@': (a, b) => containsAll(b, a),
    '&&': (a, b) => a.some(finder(b, a.length))
  }
  return Object.hasOwn(tests, operator) ? tests[operator] : undefined
}
