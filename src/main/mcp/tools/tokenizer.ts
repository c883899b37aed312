import { createRequire } from 'node:module'

const requireHere = createRequire(__filename)

/** Which tokenizer the numbers come from, as the page and the CLI name it. */
export function tokenizerInfo() {
  return {
    package: 'gpt-tokenizer',
    version: (requireHere('gpt-tokenizer/package.json') as { version: string }).version,
    encoding: 'o200k_base',
    /** What a person must know before reading the numbers. */
    note:
      "o200k_base is the tokenizer of OpenAI's GPT-4o and later models: exact for them. Claude's tokenizer is not " +
      'public, so for Claude models the counts are an approximation. Hosts add a tool-use system prompt of their own ' +
      '(a few hundred tokens), not counted here.'
  }
}

/**
 * BPE merges within one pre-tokenised piece take time quadratic in its length (a 100,000-letter word takes seconds).
 * A text holding a piece longer than this is counted with such pieces cut into parts: approximate, and linear.
 */
const MAX_PIECE = 256
/** Beyond this many characters the rest of a text is estimated from the part counted. */
const MAX_COUNTED = 1_000_000
/** A run of letters, or of signs, that the encoding's pre-tokeniser would keep in one piece. */
const LONG_PIECE = new RegExp(`[\\p{L}\\p{M}]{${MAX_PIECE + 1},}|[^\\s\\p{L}\\p{N}]{${MAX_PIECE + 1},}`, 'gu')

export interface TokenCount {
  tokens: number
  /** False where the text was too long (or held a piece too long) to count exactly. */
  exact: boolean
}

type Counter = (text: string, options: { disallowedSpecial: Set<string> }) => number
let counter: Counter | null = null

/** The encoding is a few megabytes of ranks: loaded on the first count, not at start-up. */
function encoding(): Counter {
  if (!counter) {
    counter = (requireHere('gpt-tokenizer/encoding/o200k_base') as { countTokens: Counter }).countTokens
  }
  return counter
}

/** Special-token text such as `<|endoftext|>` in a description is ordinary text here, as a host sends it. */
const ordinary = (text: string) => encoding()(text, { disallowedSpecial: new Set() })

/** The number of o200k_base tokens of `text`; exact unless it is huge or pathological (see MAX_PIECE). */
export function countTokens(text: string): TokenCount {
  if (text.length > MAX_COUNTED) {
    const head = countTokens(text.slice(0, MAX_COUNTED))
    return { tokens: Math.ceil((head.tokens * text.length) / MAX_COUNTED), exact: false }
  }
  const long = [...text.matchAll(LONG_PIECE)]
  if (long.length === 0) return { tokens: ordinary(text), exact: true }
  let tokens = 0
  let from = 0
  for (const match of long) {
    tokens += ordinary(text.slice(from, match.index))
    for (let at = 0; at < match[0].length; at += MAX_PIECE) tokens += ordinary(match[0].slice(at, at + MAX_PIECE))
    from = match.index + match[0].length
  }
  return { tokens: tokens + ordinary(text.slice(from)), exact: false }
}
