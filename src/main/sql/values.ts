import { WhereRuntimeError } from './errors'
import { isDigit, skipDigits, skipSpaces, trimSpaces } from './text-scan'

export * from './datetime'

/**
 * Postgres values decoded from their text output, and the few operations the evaluator needs.
 * Every parser throws WhereRuntimeError with Postgres's wording when Postgres would reject the input.
 */

function invalid(typeLabel: string, text: string): WhereRuntimeError {
  return new WhereRuntimeError(`invalid input syntax for type ${typeLabel}: "${text}"`)
}

export function divisionByZero(): never {
  throw new WhereRuntimeError('division by zero')
}

// ---------- integers ----------

export type IntName = 'int2' | 'int4' | 'int8'

const INT_BOUNDS: Record<IntName, readonly [bigint, bigint, string]> = {
  int2: [-32768n, 32767n, 'smallint'],
  int4: [-2147483648n, 2147483647n, 'integer'],
  int8: [-9223372036854775808n, 9223372036854775807n, 'bigint']
}

export function checkIntRange(value: bigint, name: IntName): bigint {
  const [min, max, label] = INT_BOUNDS[name]
  if (value < min || value > max) throw new WhereRuntimeError(`${label} out of range`)
  return value
}

// Unambiguous (each character has one place to go), so matching is linear; [ \t\n\v\f\r] is Postgres's isspace()
const INT_INPUT =
  /^[ \t\n\v\f\r]*([+-]?)(0[xX][0-9a-fA-F]+(?:_[0-9a-fA-F]+)*|0[oO][0-7]+(?:_[0-7]+)*|0[bB][01]+(?:_[01]+)*|\d+(?:_\d+)*)[ \t\n\v\f\r]*$/

export function parseInt(text: string, name: IntName): bigint {
  const match = INT_INPUT.exec(text)
  if (!match) throw invalid(INT_BOUNDS[name][2], text)
  const digits = (match[2] ?? '').replaceAll('_', '').toLowerCase()
  // past 64 significant digits no base fits in 64 bits: out of range before BigInt reads a long text
  const prefix = /^0[xob]/.test(digits) ? 2 : 0
  let zeros = prefix
  while (zeros < digits.length - 1 && digits.charCodeAt(zeros) === 48) zeros++
  if (digits.length - zeros > 64) throw new WhereRuntimeError(`${INT_BOUNDS[name][2]} out of range`)
  const magnitude = BigInt(digits)
  return checkIntRange(match[1] === '-' ? -magnitude : magnitude, name)
}

// ---------- numeric ----------

/** A finite numeric is `digits / 10^scale`; the scale is kept because Postgres prints it. */
export interface Decimal {
  readonly digits: bigint
  readonly scale: number
}
export type Numeric = Decimal | 'NaN' | 'Infinity' | '-Infinity'

const NUMERIC_INPUT = /^[ \t\n\v\f\r]*([+-]?)(\d+(?:_\d+)*)?(?:\.(\d+(?:_\d+)*)?)?(?:[eE]([+-]?\d+))?[ \t\n\v\f\r]*$/

/** Postgres's numeric holds at most 131,072 digits before the point and 16,383 after it. */
const NUMERIC_MAX_INTEGER_DIGITS = 131_072
const NUMERIC_MAX_SCALE = 16_383

const numericOverflow = (): WhereRuntimeError => new WhereRuntimeError('value overflows numeric format')

export function parseNumeric(text: string): Numeric {
  const special = trimSpaces(text).toLowerCase()
  if (special === 'nan') return 'NaN'
  if (special === 'infinity' || special === '+infinity' || special === 'inf' || special === '+inf') return 'Infinity'
  if (special === '-infinity' || special === '-inf') return '-Infinity'
  const match = NUMERIC_INPUT.exec(text)
  const whole = match?.[2]?.replaceAll('_', '') ?? ''
  const fraction = match?.[3]?.replaceAll('_', '') ?? ''
  if (!match || (whole === '' && fraction === '')) throw invalid('numeric', text)
  const exponentText = match[4] ?? '0'
  // checked before any digit is multiplied out: `1e999999999` is refused, not computed
  if (exponentText.replace(/^[+-]?0*/, '').length > 9) throw numericOverflow()
  const exponent = Number(exponentText)
  const all = whole + fraction
  let zeros = 0
  while (zeros < all.length && all.charCodeAt(zeros) === 48) zeros++
  let scale = fraction.length - exponent
  if (scale > NUMERIC_MAX_SCALE || all.length - zeros - scale > NUMERIC_MAX_INTEGER_DIGITS) throw numericOverflow()
  let digits = BigInt(all)
  let shown = all
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale)
    shown += '0'.repeat(-scale)
    scale = 0
  }
  const value = { digits: match[1] === '-' ? -digits : digits, scale }
  numericTexts.set(value, decimalText(shown, scale, digits !== 0n && match[1] === '-'))
  return value
}

/**
 * The text of numerics read from text, built from that text: printing one (a constant in generated SQL, a probe's
 * bound) never turns its digits back into decimal, which costs far more than linear time for long numbers.
 */
const numericTexts = new WeakMap<Decimal, string>()

/** `digits` (leading zeros allowed) with the point `scale` digits from the right, as numeric output writes it. */
function decimalText(digits: string, scale: number, negative: boolean): string {
  let zeros = 0
  while (zeros < digits.length - scale - 1 && digits.charCodeAt(zeros) === 48) zeros++
  const text = digits.slice(zeros).padStart(scale + 1, '0')
  const fraction = scale > 0 ? `.${text.slice(text.length - scale)}` : ''
  return `${negative ? '-' : ''}${text.slice(0, text.length - scale)}${fraction}`
}

/** Postgres's limits on a computed numeric: past 131,072 integer digits an error; past 16,383 decimals rounded. */
function checkNumeric(value: Decimal): Decimal {
  let { digits, scale } = value
  if (scale > NUMERIC_MAX_SCALE) {
    const unit = 10n ** BigInt(scale - NUMERIC_MAX_SCALE)
    const magnitude = digits < 0n ? -digits : digits
    const rounded = (magnitude + unit / 2n) / unit
    digits = digits < 0n ? -rounded : rounded
    scale = NUMERIC_MAX_SCALE
  }
  // the hexadecimal length (linear to read) puts the decimal one within two digits; only near the limit is it compared
  const magnitude = digits < 0n ? -digits : digits
  const decimalDigits = magnitude.toString(16).length * Math.log10(16)
  if (decimalDigits - scale > NUMERIC_MAX_INTEGER_DIGITS + 2) throw numericOverflow()
  if (decimalDigits - scale > NUMERIC_MAX_INTEGER_DIGITS - 2 && magnitude >= overflowBound(scale))
    throw numericOverflow()
  return { digits, scale }
}

const overflowBounds = new Map<number, bigint>()

/** 10^(131,072 + scale): the least magnitude that overflows at that scale. */
function overflowBound(scale: number): bigint {
  let bound = overflowBounds.get(scale)
  if (bound === undefined) {
    if (overflowBounds.size >= 16) overflowBounds.clear()
    bound = 10n ** BigInt(NUMERIC_MAX_INTEGER_DIGITS + scale)
    overflowBounds.set(scale, bound)
  }
  return bound
}

export function decimalFromInt(value: bigint): Decimal {
  return { digits: value, scale: 0 }
}

function rescale(value: Decimal, scale: number): bigint {
  return value.digits * 10n ** BigInt(scale - value.scale)
}

const NUMERIC_RANK: Record<Exclude<Numeric, Decimal>, number> = { '-Infinity': -1, Infinity: 1, NaN: 2 }

/** Postgres order: -Infinity < finite < Infinity < NaN, and NaN = NaN. */
export function compareNumeric(a: Numeric, b: Numeric): number {
  if (typeof a === 'object' && typeof b === 'object') {
    const scale = Math.max(a.scale, b.scale)
    const left = rescale(a, scale)
    const right = rescale(b, scale)
    return left < right ? -1 : left > right ? 1 : 0
  }
  const rank = (v: Numeric): number => (typeof v === 'object' ? 0 : NUMERIC_RANK[v])
  return Math.sign(rank(a) - rank(b))
}

/** Sign of a numeric as -1, 0, 1; NaN as NaN. */
function signOf(value: Numeric): number {
  if (value === 'NaN') return NaN
  if (value === 'Infinity') return 1
  if (value === '-Infinity') return -1
  return value.digits < 0n ? -1 : value.digits > 0n ? 1 : 0
}

function infinity(sign: number): Numeric {
  return Number.isNaN(sign) || sign === 0 ? 'NaN' : sign > 0 ? 'Infinity' : '-Infinity'
}

export function addNumeric(a: Numeric, b: Numeric, sign: 1n | -1n): Numeric {
  if (typeof a === 'object' && typeof b === 'object') {
    const scale = Math.max(a.scale, b.scale)
    return checkNumeric({ digits: rescale(a, scale) + sign * rescale(b, scale), scale })
  }
  if (a === 'NaN' || b === 'NaN') return 'NaN'
  const left = typeof a === 'object' ? 0 : signOf(a)
  const right = (typeof b === 'object' ? 0 : signOf(b)) * Number(sign)
  if (left !== 0 && right !== 0 && left !== right) return 'NaN'
  return infinity(left || right)
}

export function multiplyNumeric(a: Numeric, b: Numeric): Numeric {
  if (typeof a === 'object' && typeof b === 'object')
    return checkNumeric({ digits: a.digits * b.digits, scale: a.scale + b.scale })
  return infinity(signOf(a) * signOf(b))
}

export function moduloNumeric(a: Numeric, b: Numeric): Numeric {
  if (a === 'NaN' || b === 'NaN') return 'NaN'
  if (typeof b === 'object' && b.digits === 0n) divisionByZero()
  if (typeof a !== 'object') return 'NaN'
  if (typeof b !== 'object') return a
  const scale = Math.max(a.scale, b.scale)
  return { digits: rescale(a, scale) % rescale(b, scale), scale }
}

export function negateNumeric(a: Numeric): Numeric {
  if (a === 'NaN') return a
  if (a === 'Infinity') return '-Infinity'
  if (a === '-Infinity') return 'Infinity'
  return { digits: -a.digits, scale: a.scale }
}

export function numericToString(value: Numeric): string {
  if (typeof value !== 'object') return value
  const known = numericTexts.get(value)
  if (known !== undefined) return known
  const negative = value.digits < 0n
  const text = (negative ? -value.digits : value.digits).toString().padStart(value.scale + 1, '0')
  const whole = text.slice(0, text.length - value.scale)
  const fraction = value.scale > 0 ? `.${text.slice(text.length - value.scale)}` : ''
  return `${negative ? '-' : ''}${whole}${fraction}`
}

/** Postgres rounds numeric to integer half away from zero. */
export function numericToInt(value: Numeric, name: IntName): bigint {
  const decimal = typeof value === 'object' ? value : null
  if (!decimal) throw new WhereRuntimeError(`cannot convert ${String(value)} to ${INT_BOUNDS[name][2]}`)
  const unit = 10n ** BigInt(decimal.scale)
  const magnitude = decimal.digits < 0n ? -decimal.digits : decimal.digits
  const rounded = (magnitude + unit / 2n) / unit
  return checkIntRange(decimal.digits < 0n ? -rounded : rounded, name)
}

export function numericToFloat(value: Numeric): number {
  return typeof value === 'object' ? Number(numericToString(value)) : Number(value)
}

/** The canonical text of a number for equality lookups: `1`, `1.0` and `01` all give `1`. */
export function canonicalNumber(value: Numeric): string {
  if (typeof value !== 'object' || value.scale === 0) return numericToString(value)
  const text = numericToString(value)
  let end = text.length
  while (text.charCodeAt(end - 1) === 48) end--
  return text.slice(0, text.charCodeAt(end - 1) === 46 ? end - 1 : end)
}

// ---------- float ----------

/** Whether `text` is `[+-](digits[.digits]|.digits)[(e|E)[+-]digits]` between spaces: one pass, no backtracking. */
function isFloatSyntax(text: string): boolean {
  let position = skipSpaces(text, 0)
  const sign = text.charCodeAt(position)
  if (sign === 43 || sign === 45) position++
  const wholeEnd = skipDigits(text, position)
  let end = wholeEnd
  if (text.charCodeAt(end) === 46 /* . */) end = skipDigits(text, end + 1)
  if (wholeEnd === position && end - wholeEnd < 2) return false
  if ((text.charCodeAt(end) | 0x20) === 0x65 /* e */) {
    let exponent = end + 1
    const exponentSign = text.charCodeAt(exponent)
    if (exponentSign === 43 || exponentSign === 45) exponent++
    if (!isDigit(text.charCodeAt(exponent))) return false
    end = skipDigits(text, exponent)
  }
  return skipSpaces(text, end) === text.length
}

export function parseFloat8(text: string, label = 'double precision'): number {
  const trimmed = trimSpaces(text)
  const special = trimmed.toLowerCase()
  if (special === 'nan') return NaN
  if (special === 'infinity' || special === '+infinity' || special === 'inf' || special === '+inf') return Infinity
  if (special === '-infinity' || special === '-inf') return -Infinity
  if (!isFloatSyntax(text)) throw invalid(label, text)
  const value = Number(trimmed)
  if (!Number.isFinite(value)) throw new WhereRuntimeError(`"${trimmed}" is out of range for type ${label}`)
  return value
}

export function parseFloat4(text: string): number {
  return Math.fround(parseFloat8(text, 'real'))
}

/** Postgres order for floats: NaN equals NaN and sorts above everything. */
export function compareFloat(a: number, b: number): number {
  if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1
  if (Number.isNaN(b)) return -1
  return a < b ? -1 : a > b ? 1 : 0
}

export function checkFloat(value: number): number {
  if (Number.isFinite(value) || Number.isNaN(value)) return value
  throw new WhereRuntimeError('value out of range: overflow')
}

/** float8 to integer rounds half to even (rint). */
export function floatToInt(value: number, name: IntName): bigint {
  if (!Number.isFinite(value)) throw new WhereRuntimeError(`${INT_BOUNDS[name][2]} out of range`)
  const floor = Math.floor(value)
  const diff = value - floor
  const rounded = diff > 0.5 || (diff === 0.5 && floor % 2 !== 0) ? floor + 1 : floor
  return checkIntRange(BigInt(rounded), name)
}

// ---------- bool ----------

/** Postgres boolin: case-insensitive unique prefixes of true/false/yes/no, on/off, 1/0. */
export function parseBool(text: string): boolean {
  const value = trimSpaces(text).toLowerCase()
  const prefixOf = (word: string, minimum = 1): boolean => value.length >= minimum && word.startsWith(value)
  if (value === '1' || prefixOf('true') || prefixOf('yes') || prefixOf('on', 2)) return true
  if (value === '0' || prefixOf('false') || prefixOf('no') || prefixOf('off', 2)) return false
  throw invalid('boolean', text)
}

// ---------- uuid ----------

export function parseUuid(text: string): string {
  const inner = text.startsWith('{') && text.endsWith('}') ? text.slice(1, -1) : text
  if (!/^[0-9a-fA-F]{4}(?:-?[0-9a-fA-F]{4}){7}$/.test(inner)) throw invalid('uuid', text)
  const hex = inner.replaceAll('-', '').toLowerCase()
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

// ---------- text ----------

/**
 * UTF-16 code units reordered into code-point order: surrogates (code points above U+FFFF) after U+E000–U+FFFF.
 * Both strings are well-formed, so the first differing unit decides as the first differing code point would.
 */
const codePointRank = (unit: number): number => (unit < 0xd800 ? unit : unit < 0xe000 ? unit + 0x2000 : unit - 0x800)

/** Code-point order, which is what COLLATE "C" gives on UTF-8 databases. */
export function compareText(a: string, b: string): number {
  if (a === b) return 0
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) < codePointRank(y) ? -1 : 1
  }
  return a.length < b.length ? -1 : 1
}

/** lower()/upper()/ILIKE under COLLATE "C" fold ASCII letters only. */
export function asciiLower(value: string): string {
  return value.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())
}

export function asciiUpper(value: string): string {
  return value.replace(/[a-z]+/g, (letters) => letters.toUpperCase())
}

export function compareBigint(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0
}
