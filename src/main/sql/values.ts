import { WhereRuntimeError } from './errors'

/**
 * Postgres values decoded from their text output, and the few operations the evaluator needs.
 * Every parser throws WhereRuntimeError with Postgres's wording when Postgres would reject the input.
 */

function invalid(typeLabel: string, text: string): WhereRuntimeError {
  return new WhereRuntimeError(`invalid input syntax for type ${typeLabel}: "${text}"`)
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

const INT_INPUT =
  /^\s*([+-]?)(0[xX][0-9a-fA-F]+(?:_[0-9a-fA-F]+)*|0[oO][0-7]+(?:_[0-7]+)*|0[bB][01]+(?:_[01]+)*|\d+(?:_\d+)*)\s*$/

export function parseInt(text: string, name: IntName): bigint {
  const match = INT_INPUT.exec(text)
  if (!match) throw invalid(INT_BOUNDS[name][2], text)
  const digits = (match[2] ?? '').replaceAll('_', '').toLowerCase()
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

const NUMERIC_INPUT = /^\s*([+-]?)(\d+(?:_\d+)*)?(?:\.(\d+(?:_\d+)*)?)?(?:[eE]([+-]?\d+))?\s*$/

export function parseNumeric(text: string): Numeric {
  const special = text.trim().toLowerCase()
  if (special === 'nan') return 'NaN'
  if (special === 'infinity' || special === '+infinity' || special === 'inf' || special === '+inf') return 'Infinity'
  if (special === '-infinity' || special === '-inf') return '-Infinity'
  const match = NUMERIC_INPUT.exec(text)
  const whole = match?.[2]?.replaceAll('_', '') ?? ''
  const fraction = match?.[3]?.replaceAll('_', '') ?? ''
  if (!match || (whole === '' && fraction === '')) throw invalid('numeric', text)
  const exponent = Number(match[4] ?? '0')
  let digits = BigInt(whole + fraction)
  let scale = fraction.length - exponent
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale)
    scale = 0
  }
  return { digits: match[1] === '-' ? -digits : digits, scale }
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
    return { digits: rescale(a, scale) + sign * rescale(b, scale), scale }
  }
  if (a === 'NaN' || b === 'NaN') return 'NaN'
  const left = typeof a === 'object' ? 0 : signOf(a)
  const right = (typeof b === 'object' ? 0 : signOf(b)) * Number(sign)
  if (left !== 0 && right !== 0 && left !== right) return 'NaN'
  return infinity(left || right)
}

export function multiplyNumeric(a: Numeric, b: Numeric): Numeric {
  if (typeof a === 'object' && typeof b === 'object') return { digits: a.digits * b.digits, scale: a.scale + b.scale }
  return infinity(signOf(a) * signOf(b))
}

export function negateNumeric(a: Numeric): Numeric {
  if (a === 'NaN') return a
  if (a === 'Infinity') return '-Infinity'
  if (a === '-Infinity') return 'Infinity'
  return { digits: -a.digits, scale: a.scale }
}

export function numericToString(value: Numeric): string {
  if (typeof value !== 'object') return value
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
  if (typeof value !== 'object') return value
  let { digits, scale } = value
  while (scale > 0 && digits % 10n === 0n) {
    digits /= 10n
    scale -= 1
  }
  return numericToString({ digits, scale })
}

// ---------- float ----------

const FLOAT_INPUT = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/

export function parseFloat8(text: string, label = 'double precision'): number {
  const special = text.trim().toLowerCase()
  if (special === 'nan') return NaN
  if (special === 'infinity' || special === '+infinity' || special === 'inf' || special === '+inf') return Infinity
  if (special === '-infinity' || special === '-inf') return -Infinity
  if (!FLOAT_INPUT.test(text)) throw invalid(label, text)
  const value = Number(text.trim())
  if (!Number.isFinite(value)) throw new WhereRuntimeError(`"${text.trim()}" is out of range for type ${label}`)
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
  const value = text.trim().toLowerCase()
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

// ---------- date and time ----------

/** Days since 1970-01-01 (proleptic Gregorian, astronomical years), after H. Hinnant's days_from_civil. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

function civilFromDays(days: number): [number, number, number] {
  const z = days + 719468
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  return [era * 400 + yoe + (month <= 2 ? 1 : 0), month, day]
}

function daysInMonth(year: number, month: number): number {
  return daysFromCivil(month === 12 ? year + 1 : year, month === 12 ? 1 : month + 1, 1) - daysFromCivil(year, month, 1)
}

/** Dates are days since the epoch; ±Infinity stand for Postgres's infinity / -infinity. */
export type DateValue = number
/** Timestamps are microseconds since the epoch; the two sentinels stand for ±infinity. */
export type TimestampValue = bigint
export const TIMESTAMP_INFINITY = 2n ** 63n
const TIMESTAMP_MINUS_INFINITY = -(2n ** 63n)
const MICROS_PER_DAY = 86_400_000_000n

const DATE_TIME_INPUT =
  /^\s*(\d{4,})-(\d{1,2})-(\d{1,2})(?:(?:[ T]|\s+)(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(?:(Z)|([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?)?(\s+BC)?\s*$/i

interface DateTimeParts {
  days: number
  micros: bigint
  offsetSeconds: number | null
}

function parseDateTime(text: string, typeLabel: string): DateTimeParts {
  const match = DATE_TIME_INPUT.exec(text)
  if (!match) throw invalid(typeLabel, text)
  const [, y, mo, d, h, mi, s, frac, zulu, offsetSign, oh, om, os, bc] = match
  const calendarYear = Number(y)
  const year = bc ? 1 - calendarYear : calendarYear
  const month = Number(mo)
  const day = Number(d)
  const hour = Number(h ?? '0')
  const minute = Number(mi ?? '0')
  const second = Number(s ?? '0')
  const outOfRange = new WhereRuntimeError(`date/time field value out of range: "${text}"`)
  if (calendarYear === 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) throw outOfRange
  if (hour > 24 || minute > 59 || second > 60 || (hour === 24 && (minute > 0 || second > 0 || frac))) throw outOfRange
  const fractionMicros = Math.round(Number(`0.${frac ?? '0'}`) * 1_000_000)
  const micros = BigInt(((hour * 60 + minute) * 60 + second) * 1_000_000 + fractionMicros)
  const offsetSeconds = zulu
    ? 0
    : offsetSign
      ? (offsetSign === '-' ? -1 : 1) * (Number(oh) * 3600 + Number(om ?? '0') * 60 + Number(os ?? '0'))
      : null
  return { days: daysFromCivil(year, month, day), micros, offsetSeconds }
}

function special(text: string): 1 | -1 | 0 {
  const value = text.trim().toLowerCase()
  return value === 'infinity' || value === '+infinity' ? 1 : value === '-infinity' ? -1 : 0
}

export function parseDate(text: string): DateValue {
  const sign = special(text)
  if (sign !== 0) return sign * Infinity
  return parseDateTime(text, 'date').days
}

/** `timestamp` ignores any offset in its input, as Postgres does. */
export function parseTimestamp(text: string): TimestampValue {
  const sign = special(text)
  if (sign !== 0) return sign > 0 ? TIMESTAMP_INFINITY : TIMESTAMP_MINUS_INFINITY
  const parts = parseDateTime(text, 'timestamp without time zone')
  return BigInt(parts.days) * MICROS_PER_DAY + parts.micros
}

/** A timestamptz without an offset is read as UTC: the shape server's sessions run with TimeZone=UTC. */
export function parseTimestamptz(text: string): TimestampValue {
  const sign = special(text)
  if (sign !== 0) return sign > 0 ? TIMESTAMP_INFINITY : TIMESTAMP_MINUS_INFINITY
  const parts = parseDateTime(text, 'timestamp with time zone')
  return BigInt(parts.days) * MICROS_PER_DAY + parts.micros - BigInt((parts.offsetSeconds ?? 0) * 1_000_000)
}

export function dateToTimestamp(days: DateValue): TimestampValue {
  if (days === Infinity) return TIMESTAMP_INFINITY
  if (days === -Infinity) return TIMESTAMP_MINUS_INFINITY
  return BigInt(days) * MICROS_PER_DAY
}

export function timestampToDate(value: TimestampValue): DateValue {
  if (value === TIMESTAMP_INFINITY) return Infinity
  if (value === TIMESTAMP_MINUS_INFINITY) return -Infinity
  const days = value / MICROS_PER_DAY
  return Number(value < 0n && days * MICROS_PER_DAY !== value ? days - 1n : days)
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0')
}

function formatDays(days: number): string {
  const [year, month, day] = civilFromDays(days)
  const bc = year <= 0
  return `${pad(bc ? 1 - year : year, 4)}-${pad(month, 2)}-${pad(day, 2)}${bc ? ' BC' : ''}`
}

/** ISO output (DateStyle ISO), used for constants in generated SQL and for date::text. */
export function formatDate(days: DateValue): string {
  if (days === Infinity) return 'infinity'
  if (days === -Infinity) return '-infinity'
  return formatDays(days)
}

export function formatTimestamp(value: TimestampValue, withZone: boolean): string {
  if (value === TIMESTAMP_INFINITY) return 'infinity'
  if (value === TIMESTAMP_MINUS_INFINITY) return '-infinity'
  const days = timestampToDate(value)
  let micros = value - BigInt(days) * MICROS_PER_DAY
  const fraction = micros % 1_000_000n
  micros /= 1_000_000n
  const seconds = Number(micros)
  const date = formatDays(days)
  const [datePart, era] = date.endsWith(' BC') ? [date.slice(0, -3), ' BC'] : [date, '']
  const time = `${pad(Math.floor(seconds / 3600), 2)}:${pad(Math.floor(seconds / 60) % 60, 2)}:${pad(seconds % 60, 2)}`
  const frac = fraction > 0n ? `.${fraction.toString().padStart(6, '0').replace(/0+$/, '')}` : ''
  return `${datePart} ${time}${frac}${withZone ? '+00' : ''}${era}`
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
