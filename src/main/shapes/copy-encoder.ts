import type { ShapeDefinition } from './definition'
import { InsertEncoder } from './messages'
import { parseCopyLine } from './row-sql'

const TAB = 9
const NEWLINE = 10
const QUOTE = 34
const SLASH = 47
const BACKSLASH = 92

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8')
const NULL_JSON = bytes('null')
const TRUE_JSON = bytes('"true"')
const FALSE_JSON = bytes('"false"')
const ROW_END = bytes('}}\n')

/** One snapshot chunk's worth of encoded rows, and where each row ends in it. */
export interface EncodedRows {
  data: Buffer
  /** End offset (exclusive, after its newline) of each row in `data`. */
  rowEnds: number[]
}

/** What a scan of one line found, as bits. */
const UNSAFE = 1
const HAS_QUOTE = 2
const HAS_SLASH = 4

/**
 * Turns COPY text output into insert messages (one JSON line each) byte for byte, without decoding to strings: COPY's
 * escapes (`\\ \n \r \t \b \f`) are JSON's own, so a field is a JSON string body once its `"` are escaped. Lines that
 * are not JSON-safe (a `\v` escape, raw control characters, a wrong number of fields) go through the general
 * InsertEncoder. Each line is scanned once by a plain loop and copied once: native calls per field (indexOf,
 * subarray) cost more than the bytes themselves on rows of a few dozen bytes.
 */
export class CopyEncoder {
  private readonly general: InsertEncoder
  private readonly head: Buffer
  private readonly valueHead: Buffer
  private readonly names: Buffer[]
  private readonly isBool: boolean[]
  private readonly keyIndexes: number[]
  private readonly fieldCount: number
  /** Bytes a row adds beyond its fields (twice over, for keys and escapes): enough room reserved per row. */
  private readonly rowOverhead: number
  private readonly starts: number[]
  private readonly ends: number[]
  private readonly out = new Writer(0)

  constructor(definition: ShapeDefinition) {
    this.general = new InsertEncoder(definition)
    const { table } = definition
    const headers = { operation: 'insert', relation: [table.schema, table.name] }
    const keyStart = JSON.stringify(this.general.keyStart).slice(1, -1)
    this.head = bytes(`{"headers":${JSON.stringify(headers)},"key":"${keyStart}`)
    this.valueHead = bytes('","value":{')
    this.names = definition.columns.map((name, index) => bytes(`${index === 0 ? '' : ','}${JSON.stringify(name)}:`))
    this.isBool = definition.columns.map((name) => table.columns.some((column) => column.name === name && column.type === 'bool' && !column.isArray))
    this.keyIndexes = table.keyColumns.map((name) => this.general.columns.indexOf(name))
    this.fieldCount = this.general.columns.length
    const namesSize = this.names.reduce((sum, name) => sum + name.length, 0)
    this.rowOverhead = this.head.length + this.valueHead.length + namesSize + ROW_END.length + 8 * (this.fieldCount + this.keyIndexes.length)
    this.starts = new Array<number>(this.fieldCount).fill(0)
    this.ends = new Array<number>(this.fieldCount).fill(0)
  }

  /** The columns the COPY must select, in order. */
  get columns(): string[] {
    return this.general.columns
  }

  /**
   * Encodes the complete lines of `data` (which must end with a newline). The result lives in the encoder's own
   * buffer: it is valid until the next call.
   */
  encode(data: Buffer): EncodedRows {
    // JSON rows run three to four times the size of COPY's: room for that up front, so the buffer rarely grows
    const out = this.out
    out.restart(data.length * 4 + 1024)
    const rowEnds: number[] = []
    let lineStart = 0
    while (lineStart < data.length) {
      const traits = this.scan(data, lineStart)
      const lineEnd = this.lineEnd
      if (lineEnd === -1) break
      if (traits & UNSAFE) out.string(`${this.general.encode(parseCopyLine(data.toString('utf8', lineStart, lineEnd)))}\n`)
      else this.row(data, out, lineEnd - lineStart, traits)
      rowEnds.push(out.length)
      lineStart = lineEnd + 1
    }
    return { data: out.result(), rowEnds }
  }

  /** Where the line scanned last ends (its newline), -1 when it has none. */
  private lineEnd = -1

  /** Field boundaries of the line at `start` into starts/ends, and what the line holds (UNSAFE, HAS_QUOTE, HAS_SLASH). */
  private scan(data: Buffer, start: number): number {
    const { starts, ends, fieldCount } = this
    const length = data.length
    let traits = 0
    let field = 0
    starts[0] = start
    let at = start
    for (; at < length; at++) {
      const byte = data[at] as number
      if (byte > SLASH && byte !== BACKSLASH) continue
      if (byte === NEWLINE) break
      if (byte === TAB) {
        if (field + 1 === fieldCount) traits |= UNSAFE
        else {
          ends[field] = at
          starts[++field] = at + 1
        }
      } else if (byte < 32) traits |= UNSAFE
      else if (byte === QUOTE) traits |= HAS_QUOTE
      else if (byte === SLASH) traits |= HAS_SLASH
      else if (byte === BACKSLASH) {
        // COPY escapes every backslash in data, so the next byte is an escape letter (\v has no JSON form)
        const next = data[at + 1]
        if (next === 118) traits |= UNSAFE
        if (next !== NEWLINE) at += 1
      }
    }
    this.lineEnd = at < length ? at : -1
    if (field !== fieldCount - 1) traits |= UNSAFE
    ends[field] = at
    return traits
  }

  private row(data: Buffer, out: Writer, lineLength: number, traits: number): void {
    const { starts, ends, keyIndexes, names, isBool } = this
    const quotes = (traits & HAS_QUOTE) !== 0
    const slashes = (traits & HAS_SLASH) !== 0
    out.reserve(this.rowOverhead + 4 * lineLength)
    out.bytes(this.head)
    for (let position = 0; position < keyIndexes.length; position++) {
      if (position > 0) out.byte(SLASH)
      const index = keyIndexes[position] as number
      const start = starts[index] as number
      const end = ends[index] as number
      if (isNull(data, start, end)) out.byte(UNDERSCORE)
      else {
        out.byte(BACKSLASH)
        out.byte(QUOTE)
        out.field(data, start, end, quotes, slashes)
        out.byte(BACKSLASH)
        out.byte(QUOTE)
      }
    }
    out.bytes(this.valueHead)
    for (let index = 0; index < names.length; index++) {
      out.bytes(names[index] as Buffer)
      const start = starts[index] as number
      const end = ends[index] as number
      if (isNull(data, start, end)) out.bytes(NULL_JSON)
      else if (isBool[index] && end - start === 1 && (data[start] === 116 || data[start] === 102)) out.bytes(data[start] === 116 ? TRUE_JSON : FALSE_JSON)
      else {
        out.byte(QUOTE)
        out.field(data, start, end, quotes, false)
        out.byte(QUOTE)
      }
    }
    out.bytes(ROW_END)
  }
}

const UNDERSCORE = 95

const isNull = (data: Buffer, start: number, end: number): boolean => end - start === 2 && data[start] === BACKSLASH && data[start + 1] === 78

/**
 * A growable output buffer. Rows reserve their room once, then bytes go in by plain loops without bounds checks:
 * fields are short, and for a few dozen bytes a loop beats Buffer#copy, whose per-call overhead dominated the
 * encoder's profile.
 */
class Writer {
  private buffer: Buffer
  length = 0

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size)
  }

  /** Empties the writer, keeping (or growing to) room for `size` bytes. */
  restart(size: number): void {
    this.length = 0
    if (this.buffer.length < size) this.buffer = Buffer.allocUnsafe(size)
  }

  reserve(count: number): void {
    if (this.length + count <= this.buffer.length) return
    const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + count))
    this.buffer.copy(bigger, 0, 0, this.length)
    this.buffer = bigger
  }

  /** Writes one byte into reserved room. */
  byte(value: number): void {
    this.buffer[this.length++] = value
  }

  /** Writes a constant into reserved room. */
  bytes(value: Buffer): void {
    if (value.length > 0) {
      this.buffer.set(value, this.length)
      this.length += value.length
      return
    }
    const buffer = this.buffer
    let length = this.length
    for (let at = 0; at < value.length; at++) buffer[length++] = value[at] as number
    this.length = length
  }

  /** Writes a COPY field into reserved room (at most twice its size): `"` escaped, and in keys `/` doubled. */
  field(source: Buffer, start: number, end: number, quotes: boolean, slashes: boolean): void {
    const buffer = this.buffer
    let length = this.length
    if (!quotes && !slashes) for (let at = start; at < end; at++) buffer[length++] = source[at] as number
    else
      for (let at = start; at < end; at++) {
        const byte = source[at] as number
        if (byte === QUOTE) buffer[length++] = BACKSLASH
        else if (byte === SLASH && slashes) buffer[length++] = SLASH
        buffer[length++] = byte
      }
    this.length = length
  }

  string(text: string): void {
    const size = Buffer.byteLength(text)
    this.reserve(size)
    this.length += this.buffer.write(text, this.length, 'utf8')
  }

  result(): Buffer {
    return this.buffer.subarray(0, this.length)
  }
}
