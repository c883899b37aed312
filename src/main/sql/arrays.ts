import { WhereRuntimeError } from './errors'

/**
 * Reads a Postgres array literal (`{1,2}`, `{{a,b},{"c d",NULL}}`, `[0:1]={x,y}`) into its elements,
 * flattened in storage order: the operators the evaluator supports (@>, <@, &&, ANY/ALL) ignore dimensions.
 */
export function parseArray(text: string): (string | null)[] {
  const malformed = (): WhereRuntimeError => new WhereRuntimeError(`malformed array literal: "${text}"`)
  let index = text.search(/\S/)
  if (index === -1) throw malformed()
  if (text[index] === '[') {
    const equals = text.indexOf('=', index)
    if (equals === -1 || !/^(\[-?\d+:-?\d+\])+\s*$/.test(text.slice(index, equals))) throw malformed()
    index = text.slice(equals + 1).search(/\S/) + equals + 1
  }
  const items: (string | null)[] = []
  let depth = 0
  let expectItem = true
  let afterComma = false
  for (; index < text.length; index++) {
    const char = text[index]!
    if (/\s/.test(char)) continue
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
      let value = ''
      for (index += 1; index < text.length && text[index] !== '"'; index++) {
        if (text[index] === '\\') index += 1
        value += text[index] ?? ''
      }
      if (index >= text.length) throw malformed()
      items.push(value)
    } else {
      let value = ''
      for (; index < text.length && !/[,{}"]/.test(text[index]!); index++) {
        if (text[index] === '\\') index += 1
        value += text[index] ?? ''
      }
      index -= 1
      const trimmed = value.trim()
      items.push(trimmed.toUpperCase() === 'NULL' ? null : trimmed)
    }
    expectItem = false
  }
  if (depth !== 0 || text.slice(index + 1).trim() !== '') throw malformed()
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
