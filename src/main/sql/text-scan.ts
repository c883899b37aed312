/**
 * Hand-written scanning for the value parsers: each reads a character once and never goes back, so parsing is linear
 * in the input whatever it holds (an ambiguous regular expression backtracks quadratically, or worse, on inputs that
 * almost match).
 */

/** Postgres's isspace(): space, \t, \n, \v, \f, \r — not the Unicode spaces `\s` also takes. */
export const isSpace = (code: number): boolean => code === 32 || (code >= 9 && code <= 13)

export const isDigit = (code: number): boolean => code >= 48 && code <= 57

/** The position after the spaces from `at`. */
export function skipSpaces(text: string, at: number): number {
  let position = at
  while (position < text.length && isSpace(text.charCodeAt(position))) position++
  return position
}

/** The position after the digits from `at`. */
export function skipDigits(text: string, at: number): number {
  let position = at
  while (position < text.length && isDigit(text.charCodeAt(position))) position++
  return position
}

/** The text without Postgres's leading and trailing spaces. */
export function trimSpaces(text: string): string {
  let end = text.length
  while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--
  return text.slice(Math.min(skipSpaces(text, 0), end), end)
}

/** Whether `text` holds `word` at `at`, ASCII letters in any case (`word` is lower case). */
export function hasWordAt(text: string, at: number, word: string): boolean {
  if (at + word.length > text.length) return false
  for (let i = 0; i < word.length; i++) if ((text.charCodeAt(at + i) | 0x20) !== word.charCodeAt(i)) return false
  return true
}
