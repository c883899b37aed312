import { WhereRuntimeError } from './errors'
import { asciiLower } from './values'

/** Whether a whole string matches one LIKE pattern. */
export type LikeMatcher = (value: string) => boolean

const cache = new Map<string, LikeMatcher>()
const CACHE_LIMIT = 1000

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/**
 * A LIKE pattern with the default escape character, built once: patterns of literal text and `%` only (prefix,
 * suffix, substring, equality and their combinations) are matched with string searches, which find the same leftmost
 * matches a `%` allows; patterns with `_` with a RegExp over code points.
 */
export function likeMatcher(pattern: string): LikeMatcher {
  const literals = ['']
  let source = ''
  let anyOne = false
  const chars = [...pattern]
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string
    if (char === '\\') {
      const next = chars[++i]
      if (next === undefined) {
        return () => {
          throw new WhereRuntimeError('LIKE pattern must not end with escape character')
        }
      }
      literals[literals.length - 1] += next
      source += escapeRegExp(next)
    } else if (char === '%') {
      literals.push('')
      source += '.*'
    } else if (char === '_') {
      anyOne = true
      source += '.'
    } else {
      literals[literals.length - 1] += char
      source += escapeRegExp(char)
    }
  }
  if (anyOne) {
    const regExp = new RegExp(`^${source}$`, 'su')
    return (value) => regExp.test(value)
  }
  const [first = '', ...rest] = literals
  if (rest.length === 0) return (value) => value === first
  const last = rest.pop() ?? ''
  const middle = rest.filter((literal) => literal !== '')
  return (value) => {
    if (!value.startsWith(first)) return false
    let at = first.length
    for (const literal of middle) {
      const found = value.indexOf(literal, at)
      if (found === -1) return false
      at = found + literal.length
    }
    return value.length - last.length >= at && value.endsWith(last)
  }
}

/** LIKE with a pattern known only per row; ILIKE folds ASCII letters only, as under COLLATE "C". */
export function like(value: string, pattern: string, caseInsensitive: boolean): boolean {
  const key = caseInsensitive ? asciiLower(pattern) : pattern
  let matcher = cache.get(key)
  if (!matcher) {
    matcher = likeMatcher(key)
    if (cache.size >= CACHE_LIMIT) cache.clear()
    cache.set(key, matcher)
  }
  return matcher(caseInsensitive ? asciiLower(value) : value)
}
