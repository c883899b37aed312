import { WhereRuntimeError } from './errors'
import { asciiLower } from './values'

/** Whether a whole string matches one LIKE pattern. */
export type LikeMatcher = (value: string) => boolean

const cache = new Map<string, LikeMatcher>()
const CACHE_LIMIT = 1000

/** `_` in a segment: any one code point. */
const ANY = -1

/**
 * The text between two `%` of a pattern, as code points (ANY for `_`). Its matches all have the same length in code
 * points, so the match that ends first is also the one that starts first.
 */
interface Segment {
  atoms: number[]
  /** The segment as a string when it has no `_`: then it is found by a string search. */
  literal: string | null
}

/** Splits a pattern on its unescaped `%`; null when it ends with a lone escape character. */
function segmentsOf(pattern: string): Segment[] | null {
  const segments: Segment[] = []
  let atoms: number[] = []
  let literal: string | null = ''
  for (let i = 0; i < pattern.length;) {
    let code = pattern.codePointAt(i) as number
    i += code > 0xffff ? 2 : 1
    if (code === 0x25 /* % */) {
      segments.push({ atoms, literal })
      atoms = []
      literal = ''
      continue
    }
    if (code === 0x5f /* _ */) {
      atoms.push(ANY)
      literal = null
      continue
    }
    if (code === 0x5c /* \ */) {
      if (i >= pattern.length) return null
      code = pattern.codePointAt(i) as number
      i += code > 0xffff ? 2 : 1
    }
    atoms.push(code)
    if (literal !== null) literal += String.fromCodePoint(code)
  }
  segments.push({ atoms, literal })
  return segments
}

/** The end of `segment` matched at `at`, or -1. Walks the segment once. */
function matchAt(value: string, at: number, segment: Segment): number {
  let position = at
  for (const atom of segment.atoms) {
    if (position >= value.length) return -1
    const code = value.codePointAt(position) as number
    if (atom !== ANY && atom !== code) return -1
    position += code > 0xffff ? 2 : 1
  }
  return position
}

/** Where the last `count` code points of `value` start, or -1 when it has fewer. */
function startOfLast(value: string, count: number): number {
  let position = value.length
  for (let i = 0; i < count; i++) {
    if (position === 0) return -1
    const low = value.charCodeAt(position - 1)
    const pair = low >= 0xdc00 && low <= 0xdfff && position >= 2 && (value.charCodeAt(position - 2) & 0xfc00) === 0xd800
    position -= pair ? 2 : 1
  }
  return position
}

/**
 * Finds the first match of a segment with `_` at or after `from` (its end, or -1) by bit-parallel string matching
 * (Shift-And): one pass over the value, ⌈atoms / 32⌉ word operations per code point, never going back.
 */
function shiftAndSearch(segment: Segment): (value: string, from: number) => number {
  const length = segment.atoms.length
  if (length <= 32) return shiftAndSearchOneWord(segment)
  const words = Math.ceil(length / 32)
  const anyMask = new Uint32Array(words)
  segment.atoms.forEach((atom, index) => {
    if (atom === ANY) anyMask[index >> 5]! |= 1 << (index & 31)
  })
  const masks = new Map<number, Uint32Array>()
  segment.atoms.forEach((atom, index) => {
    if (atom === ANY) return
    let mask = masks.get(atom)
    if (!mask) masks.set(atom, (mask = anyMask.slice()))
    mask[index >> 5]! |= 1 << (index & 31)
  })
  const lastWord = (length - 1) >> 5
  const lastBit = 1 << ((length - 1) & 31)
  const state = new Uint32Array(words)
  return (value, from) => {
    state.fill(0)
    for (let position = from; position < value.length;) {
      const code = value.codePointAt(position) as number
      position += code > 0xffff ? 2 : 1
      const mask = masks.get(code) ?? anyMask
      let carry = 1
      for (let word = 0; word < words; word++) {
        const current = state[word] as number
        state[word] = ((current << 1) | carry) & (mask[word] as number)
        carry = current >>> 31
      }
      if (((state[lastWord] as number) & lastBit) !== 0) return position
    }
    return -1
  }
}

/** shiftAndSearch for a segment of at most 32 atoms: its state fits one number. */
function shiftAndSearchOneWord(segment: Segment): (value: string, from: number) => number {
  let anyMask = 0
  segment.atoms.forEach((atom, index) => {
    if (atom === ANY) anyMask |= 1 << index
  })
  const masks = new Map<number, number>()
  segment.atoms.forEach((atom, index) => {
    if (atom !== ANY) masks.set(atom, (masks.get(atom) ?? anyMask) | (1 << index))
  })
  const accept = 1 << (segment.atoms.length - 1)
  return (value, from) => {
    let state = 0
    for (let position = from; position < value.length;) {
      const code = value.codePointAt(position) as number
      position += code > 0xffff ? 2 : 1
      state = ((state << 1) | 1) & (masks.get(code) ?? anyMask)
      if ((state & accept) !== 0) return position
    }
    return -1
  }
}

/** Finds the first match of a middle segment at or after `from`: its end, or -1. */
function searcher(segment: Segment): (value: string, from: number) => number {
  const literal = segment.literal
  if (literal !== null) {
    return (value, from) => {
      const found = value.indexOf(literal, from)
      return found === -1 ? -1 : found + literal.length
    }
  }
  return shiftAndSearch(segment)
}

/**
 * A LIKE pattern with the default escape character, built once. The pattern is split at its `%` into segments; the
 * first must match at the start, the last at the end, and each one between at its first place after the one before
 * (the first place leaves the most room for the rest, so no other needs trying). Matching never goes back: the work is
 * linear in the value, times ⌈segment length / 32⌉ for segments with `_`.
 */
export function likeMatcher(pattern: string): LikeMatcher {
  const segments = segmentsOf(pattern)
  if (segments === null) {
    return () => {
      throw new WhereRuntimeError('LIKE pattern must not end with escape character')
    }
  }
  const [first, ...rest] = segments as [Segment, ...Segment[]]
  const last = rest.pop()
  if (last === undefined) {
    const literal = first.literal
    return literal !== null ? (value) => value === literal : (value) => matchAt(value, 0, first) === value.length
  }
  const middle = rest.filter((segment) => segment.atoms.length > 0).map(searcher)
  const matchFirst = anchoredAtStart(first)
  const startOfMatchAtEnd = anchoredAtEnd(last)
  return (value) => {
    let at = matchFirst(value)
    for (let i = 0; i < middle.length && at !== -1; i++) at = (middle[i] as (v: string, f: number) => number)(value, at)
    return at !== -1 && startOfMatchAtEnd(value) >= at
  }
}

/** The end of the segment matched at the start of a value, or -1. */
function anchoredAtStart(segment: Segment): (value: string) => number {
  const literal = segment.literal
  if (literal !== null) return (value) => (value.startsWith(literal) ? literal.length : -1)
  return (value) => matchAt(value, 0, segment)
}

/** The start of the segment matched at the end of a value, or -1. */
function anchoredAtEnd(segment: Segment): (value: string) => number {
  const literal = segment.literal
  if (literal !== null) return (value) => (value.endsWith(literal) ? value.length - literal.length : -1)
  const length = segment.atoms.length
  return (value) => {
    const start = startOfLast(value, length)
    return start !== -1 && matchAt(value, start, segment) === value.length ? start : -1
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
