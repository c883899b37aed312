// Run as `node --import tsx adversarial-inputs.ts <workload>`: runs one workload of WORKLOADS and prints
// `done <milliseconds>`, or `failed <message>` when it throws (a row the evaluator cannot read only does not match).
import { type ColumnTypes, compileWhere, loadParser } from '../../src/main/sql'

/** The size of every adversarial input: at this size linear work takes milliseconds and quadratic work hours. */
export const ADVERSARIAL_LENGTH = 1_000_000

const n = ADVERSARIAL_LENGTH

const COLUMNS: ColumnTypes = {
  f8: { type: 'float8', category: 'number' },
  f4: { type: 'float4', category: 'number' },
  num: { type: 'numeric', category: 'number' },
  big: { type: 'int8', category: 'number' },
  day: { type: 'date', category: 'date' },
  ts: { type: 'timestamp', category: 'timestamp' },
  tstz: { type: 'timestamptz', category: 'timestamp' },
  floats: { type: '_float8', category: 'array', elementType: 'float8' },
  a: { type: '_int4', category: 'array', elementType: 'int4' },
  b: { type: '_int4', category: 'array', elementType: 'int4' },
  t: { type: 'text', category: 'text' },
  p: { type: 'text', category: 'text' }
}

/** Evaluates `where` on one row, as routing a change does: the row's values are read by the value parsers. */
const evaluate = (where: string, row: Record<string, string>) => () =>
  void compileWhere({ where, params: {}, columns: COLUMNS }).matches(row)

/** An array literal of `count` copies of `item`. */
const arrayOf = (item: string, count: number) => `{${Array.from({ length: count }, () => item).join(',')}}`

/**
 * Inputs that almost match: before this work, each made an ambiguous regular expression (or a nested loop) try every
 * way to split it.
 */
export const WORKLOADS: Readonly<Record<string, () => void>> = {
  'float8: digits then a letter': evaluate('f8 > 0', { f8: `${'1'.repeat(n)}x` }),
  'float8: digits, a point, digits, then a letter': evaluate('f8 > 0', {
    f8: `${'1'.repeat(n / 2)}.${'1'.repeat(n / 2)}x`
  }),
  'float4: spaces around digits then a letter': evaluate('f4 > 0', {
    f4: `${' '.repeat(n / 2)}1${' '.repeat(n / 2)}x`
  }),
  'numeric: digits then a letter': evaluate('num > 0', { num: `${'1'.repeat(n)}x` }),
  'numeric: an exponent of a billion': evaluate('num > 0', { num: '1e999999999' }),
  'int8: a million digits': evaluate('big > 0', { big: '9'.repeat(n) }),
  'date: spaces then a letter': evaluate("day > '2000-01-01'", { day: `2024-01-01${' '.repeat(n)}x` }),
  'timestamp: time, spaces then a letter': evaluate("ts > '2000-01-01'", {
    ts: `2024-01-01 10:00:00${' '.repeat(n)}x`
  }),
  'timestamptz: a long fraction then a letter': evaluate("tstz > '2000-01-01'", {
    tstz: `2024-01-01 10:00:00.${'1'.repeat(n)}x`
  }),
  'timestamptz: spaces before and after an offset': evaluate("tstz > '2000-01-01'", {
    tstz: `2024-01-01${' '.repeat(n / 2)}+05${' '.repeat(n / 2)}x`
  }),
  'float8[]: many elements, the last malformed': evaluate('1 = ANY(floats)', {
    floats: `${arrayOf('1.5', n / 4 - 1).slice(0, -1)},1.5x}`
  }),
  'LIKE: 25 pairs of %_ against 100 characters': evaluate(`t LIKE '${'%_'.repeat(25)}x'`, { t: 'a'.repeat(100) }),
  'ILIKE: 25 pairs of %_ against 100 characters': evaluate(`t ILIKE '${'%_'.repeat(25)}x'`, { t: 'A'.repeat(100) }),
  'LIKE: a pattern read from the row': evaluate('t LIKE p', { t: 'a'.repeat(100), p: `${'%_'.repeat(25)}x` }),
  'LIKE: a 1,000-character segment with _ against a million characters': evaluate(`t LIKE '%${'a'.repeat(998)}_b'`, {
    t: 'a'.repeat(n)
  }),
  'LIKE: every other character _ against a million characters': evaluate(`t NOT LIKE '%${'a_'.repeat(500)}b%'`, {
    t: 'a'.repeat(n)
  }),
  // each element of b is found only at the end of a: a nested loop compares 200,000² pairs
  'array @> array: 200,000 elements each': evaluate('a @> b', {
    a: `${arrayOf('2', 199_999).slice(0, -1)},1}`,
    b: arrayOf('1', 200_000)
  })
}

async function main(): Promise<void> {
  const workload = WORKLOADS[process.argv[2] ?? '']
  if (!workload) throw new Error(`no workload ${process.argv[2]}; known: ${Object.keys(WORKLOADS).join(', ')}`)
  await loadParser()
  const start = performance.now()
  try {
    workload()
  } catch (error) {
    process.stdout.write(`failed ${(error as Error).name}: ${(error as Error).message}\n`)
    return
  }
  process.stdout.write(`done ${(performance.now() - start).toFixed(1)}\n`)
}

if (process.argv[1]?.endsWith('adversarial-inputs.ts')) void main()
