import { WhereRuntimeError } from './errors'
import { hasWordAt, isDigit, isSpace, skipDigits, skipSpaces, trimSpaces } from './text-scan'

/** Dates and timestamps: read from Postgres's ISO text (and the literals a where writes), printed back the same way. */

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

interface DateTimeFields {
  year: string
  month: string
  day: string
  time: { hour: string; minute: string; second: string | null; fraction: string | null } | null
  /** Seconds east of UTC; null when the text gives no offset. */
  offsetSeconds: number | null
  bc: boolean
}

/** Reads 1 or 2 digits at `at` followed by `then` (a character code); the position after `then`, or -1. */
function oneOrTwoDigits(text: string, at: number, then: number): number {
  const end = skipDigits(text, at)
  return end > at && end - at <= 2 && text.charCodeAt(end) === then ? end + 1 : -1
}

const COLON = 58

/** `HH:MM[:SS[.fraction]]` at `at`, or null. */
function readTime(text: string, at: number): { time: NonNullable<DateTimeFields['time']>; end: number } | null {
  const afterHour = oneOrTwoDigits(text, at, COLON)
  if (afterHour === -1 || skipDigits(text, afterHour) - afterHour < 2) return null
  const time = { hour: text.slice(at, afterHour - 1), minute: text.slice(afterHour, afterHour + 2) }
  let end = afterHour + 2
  if (text.charCodeAt(end) !== COLON || skipDigits(text, end + 1) - (end + 1) < 2)
    return { time: { ...time, second: null, fraction: null }, end }
  const second = text.slice(end + 1, end + 3)
  end += 3
  if (text.charCodeAt(end) !== 46 /* . */ || !isDigit(text.charCodeAt(end + 1)))
    return { time: { ...time, second, fraction: null }, end }
  const fractionEnd = skipDigits(text, end + 1)
  return { time: { ...time, second, fraction: text.slice(end + 1, fractionEnd) }, end: fractionEnd }
}

/**
 * `±H`, `±HH`, then optionally `[:]MM`, then optionally `[:]SS`, up to the next space or the end: seconds east of UTC,
 * or null when the offset is malformed. The hour takes two digits when the rest still reads, else one.
 */
function readOffset(token: string): number | null {
  if (token.length > '+HH:MM:SS'.length) return null
  const sign = token.charCodeAt(0) === 45 /* - */ ? -1 : 1
  for (const hourEnd of [3, 2]) {
    if (skipDigits(token, 1) < hourEnd) continue
    const parts = [Number(token.slice(1, hourEnd))]
    let position = hourEnd
    while (parts.length < 3 && position < token.length) {
      const start = token.charCodeAt(position) === COLON ? position + 1 : position
      if (skipDigits(token, start) < start + 2) break
      parts.push(Number(token.slice(start, start + 2)))
      position = start + 2
    }
    if (position === token.length) return sign * ((parts[0] ?? 0) * 3600 + (parts[1] ?? 0) * 60 + (parts[2] ?? 0))
  }
  return null
}

/**
 * `YYYY-MM-DD[( |T|spaces)HH:MM[:SS[.fraction]]][spaces][Z|±HH[[:]MM[[:]SS]]][spaces BC]`, spaces around, letters in
 * any case; null when the text is not of that form. One pass, each character read once.
 */
function readDateTime(text: string): DateTimeFields | null {
  const start = skipSpaces(text, 0)
  const yearEnd = skipDigits(text, start)
  if (yearEnd - start < 4 || text.charCodeAt(yearEnd) !== 45) return null
  const monthEnd = oneOrTwoDigits(text, yearEnd + 1, 45)
  if (monthEnd === -1) return null
  const dayEnd = skipDigits(text, monthEnd)
  if (dayEnd === monthEnd || dayEnd - monthEnd > 2) return null
  const fields: DateTimeFields = {
    year: text.slice(start, yearEnd),
    month: text.slice(yearEnd + 1, monthEnd - 1),
    day: text.slice(monthEnd, dayEnd),
    time: null,
    offsetSeconds: null,
    bc: false
  }
  let position = dayEnd
  const separator = text.charCodeAt(position)
  if ((separator | 0x20) === 0x74 /* t */ || isSpace(separator)) {
    const timeStart = (separator | 0x20) === 0x74 ? position + 1 : skipSpaces(text, position)
    if (isDigit(text.charCodeAt(timeStart))) {
      const read = readTime(text, timeStart)
      if (!read) return null
      fields.time = read.time
      position = read.end
    } else if (!isSpace(separator)) return null
  }
  // BC needs a space before it: after the offset, or (without one) after the date or time
  let beforeEra = position
  position = skipSpaces(text, position)
  const zone = text.charCodeAt(position)
  if ((zone | 0x20) === 0x7a /* z */) {
    fields.offsetSeconds = 0
    beforeEra = position + 1
  } else if (zone === 43 || zone === 45) {
    let end = position
    while (end < text.length && !isSpace(text.charCodeAt(end))) end++
    fields.offsetSeconds = readOffset(text.slice(position, end))
    if (fields.offsetSeconds === null) return null
    beforeEra = end
  }
  position = skipSpaces(text, beforeEra)
  if (position > beforeEra && hasWordAt(text, position, 'bc')) {
    fields.bc = true
    position = skipSpaces(text, position + 2)
  }
  return position === text.length ? fields : null
}

interface DateTimeParts {
  days: number
  micros: bigint
  offsetSeconds: number | null
}

function invalid(typeLabel: string, text: string): WhereRuntimeError {
  return new WhereRuntimeError(`invalid input syntax for type ${typeLabel}: "${text}"`)
}

function parseDateTime(text: string, typeLabel: string): DateTimeParts {
  const fields = readDateTime(text)
  if (!fields) throw invalid(typeLabel, text)
  const calendarYear = Number(fields.year)
  const year = fields.bc ? 1 - calendarYear : calendarYear
  const month = Number(fields.month)
  const day = Number(fields.day)
  const hour = Number(fields.time?.hour ?? '0')
  const minute = Number(fields.time?.minute ?? '0')
  const second = Number(fields.time?.second ?? '0')
  const frac = fields.time?.fraction ?? null
  const outOfRange = new WhereRuntimeError(`date/time field value out of range: "${text}"`)
  if (calendarYear === 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) throw outOfRange
  if (hour > 24 || minute > 59 || second > 60 || (hour === 24 && (minute > 0 || second > 0 || frac))) throw outOfRange
  const fractionMicros = Math.round(Number(`0.${frac ?? '0'}`) * 1_000_000)
  const micros = BigInt(((hour * 60 + minute) * 60 + second) * 1_000_000 + fractionMicros)
  return { days: daysFromCivil(year, month, day), micros, offsetSeconds: fields.offsetSeconds }
}

function special(text: string): 1 | -1 | 0 {
  const value = trimSpaces(text).toLowerCase()
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
