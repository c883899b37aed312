import { WhereRuntimeError } from './errors'
import { asciiLower } from './values'

const cache = new Map<string, RegExp>()
const CACHE_LIMIT = 1000

function likeRegExp(pattern: string): RegExp {
  const cached = cache.get(pattern)
  if (cached) return cached
  let source = ''
  const chars = [...pattern]
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i]!
    if (char === '\\') {
      const next = chars[++i]
      if (next === undefined) throw new WhereRuntimeError('LIKE pattern must not end with escape character')
      source += next.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
    } else if (char === '%') source += '.*'
    else if (char === '_') source += '.'
    else source += char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
  }
  const regExp = new RegExp(`^${source}$`, 'su')
  if (cache.size >= CACHE_LIMIT) cache.clear()
  cache.set(pattern, regExp)
  return regExp
}

/** LIKE with the default escape character; ILIKE folds ASCII letters only, as under COLLATE "C". */
export function like(value: string, pattern: string, caseInsensitive: boolean): boolean {
  return caseInsensitive
    ? likeRegExp(asciiLower(pattern)).test(asciiLower(value))
    : likeRegExp(pattern).test(value)
}
